"""What a loop guard has done, over every run it served: counters and the latest events.

Shared by the loop guard's adapters (LangChain, AgentScope), which record each response the
:class:`~tokenlean.loop_guard._ladder.Ladder` gives and expose :attr:`LoopLog.stats`.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from tokenlean import checks
from tokenlean.loop_guard._detect import Detection
from tokenlean.loop_guard._ladder import Response
from tokenlean.stats import Tally

__all__ = ["MAX_EVENTS", "LoopEvent", "LoopGuardStats", "LoopLog"]

#: How many of the latest events a loop guard's stats keep (by default).
MAX_EVENTS = 1000

_COUNTER_OF: dict[Response, str] = {"nudge": "nudges", "final": "final_answers", "end": "ends"}


@dataclass(frozen=True, slots=True)
class LoopEvent:
    """One response of the guard: what it did, what triggered it, at which step count."""

    response: Response
    pattern: str
    steps: int
    detail: str


@dataclass(frozen=True, slots=True)
class LoopGuardStats:
    """Counters over every run of one middleware instance, and the latest events."""

    checks: int = 0
    nudges: int = 0
    final_answers: int = 0
    ends: int = 0
    errors: int = 0
    by_pattern: Mapping[str, int] = field(default_factory=dict)
    events: tuple[LoopEvent, ...] = ()


class LoopLog:
    """The counters and the latest ``max_events`` events, safe to add to from many threads."""

    def __init__(self, max_events: int = MAX_EVENTS) -> None:
        checks.integer(max_events, "max_events", at_least=0)
        self._lock = threading.Lock()
        self._tally = Tally(LoopGuardStats)
        self._patterns: Counter[str] = Counter()
        self._events: deque[LoopEvent] = deque(maxlen=max_events)

    @property
    def stats(self) -> LoopGuardStats:
        with self._lock:
            return self._tally.snapshot(by_pattern=dict(self._patterns), events=tuple(self._events))

    def checked(self) -> None:
        self._tally.add(checks=1)

    def failed(self) -> None:
        self._tally.add(errors=1)

    def record(self, rung: Response, trigger: str, steps: int, detection: Detection | None) -> None:
        detail = detection.describe() if detection else trigger
        with self._lock:
            self._tally.add(**{_COUNTER_OF[rung]: 1})
            self._patterns[trigger] += 1
            self._events.append(LoopEvent(rung, trigger, steps, detail))
