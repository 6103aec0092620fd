"""What every loop guard adapter is built from: its arguments, checked once, and its log.

The LangChain and AgentScope middlewares take the same arguments with the same defaults and
keep the same :class:`~tokenlean.loop_guard._ladder.Ladder` and
:class:`~tokenlean.loop_guard._log.LoopLog`; :class:`LoopGuard` is that part, written once, so
an adapter is only its translation (an adapter with arguments of its own takes these as
``**arguments: Unpack[LoopGuardArguments]``).
"""

from __future__ import annotations

from collections.abc import Sequence

from typing_extensions import TypedDict

from tokenlean.loop_guard._detect import LoopDetector
from tokenlean.loop_guard._ladder import (
    RECOVERY_STEPS,
    RESPONSES,
    Ladder,
    Response,
    Text,
    default_end,
    default_final,
    default_nudge,
)
from tokenlean.loop_guard._log import MAX_EVENTS, LoopGuardStats, LoopLog

__all__ = ["LoopGuard", "LoopGuardArguments"]


class LoopGuardArguments(TypedDict, total=False):
    """The arguments of :class:`LoopGuard` (every one optional; the defaults are its own)."""

    detector: LoopDetector | None
    responses: Sequence[Response]
    recovery_steps: int
    nudge_text: Text
    final_text: Text
    end_text: Text
    max_events: int


class LoopGuard:
    """The ladder built from a loop guard's arguments (see
    :class:`tokenlean.langchain.LoopGuardMiddleware` for each) and the log of what it did."""

    def __init__(
        self,
        *,
        detector: LoopDetector | None = None,
        responses: Sequence[Response] = RESPONSES,
        recovery_steps: int = RECOVERY_STEPS,
        nudge_text: Text = default_nudge,
        final_text: Text = default_final,
        end_text: Text = default_end,
        max_events: int = MAX_EVENTS,
    ) -> None:
        self.ladder = Ladder(
            detector if detector is not None else LoopDetector(),
            responses,  # type: ignore[arg-type]  # checked and made a tuple in __post_init__
            recovery_steps,
            {"nudge": nudge_text, "final": final_text, "end": end_text},
        )
        self._log = LoopLog(max_events)

    @property
    def stats(self) -> LoopGuardStats:
        return self._log.stats
