"""The early-exit nudge's rule: loop signals in, a yes or no out (framework-free).

A ``signals_fn`` maps the agent's steps (see :func:`tokenlean.loop_guard.build_steps`) to loop
signals in [0, 1]; :func:`loop_detected` reads ``streak``, ``hedge`` and ``diversity`` from them
(an absent, non-numeric or non-finite value counts as 0) with the reference's thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tokenlean.loop_guard._steps import Step

DEFAULT_EARLY_EXIT_TEXT = (
    "You appear to be stuck in a loop. Stop investigating now and submit your current best "
    "answer with the submission tool your task expects. Do not start another investigation."
)
#: The nudge fires when ``streak`` exceeds the first, or ``hedge`` and ``diversity`` both
#: exceed theirs (the reference's rule).
STREAK_THRESHOLD = 0.7
HEDGE_THRESHOLD = 0.6
DIVERSITY_THRESHOLD = 0.5

SignalsFn = Callable[[list[Step]], Mapping[str, float]]


def loop_detected(signals: object) -> bool:
    """Whether ``signals`` (``streak``/``hedge``/``diversity`` in [0, 1]) say the agent loops."""
    if not isinstance(signals, Mapping):
        return False

    def value(key: str) -> float:
        try:
            number = float(signals.get(key) or 0.0)
        except (TypeError, ValueError):
            return 0.0
        return number if math.isfinite(number) else 0.0

    return value("streak") > STREAK_THRESHOLD or (
        value("hedge") > HEDGE_THRESHOLD and value("diversity") > DIVERSITY_THRESHOLD
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class EarlyExitPolicy:
    """When the early-exit nudge fires and what it says; every default lives here.

    The nudge is considered once the agent has made ``min_call_index`` model calls, when
    ``signals_fn`` (steps -> signals) says the agent loops (:func:`loop_detected`).
    """

    min_call_index: int = 40
    text: str = DEFAULT_EARLY_EXIT_TEXT
    signals_fn: SignalsFn | None = None

    def __post_init__(self) -> None:
        value = self.min_call_index
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(
                f"early_exit_min_call_index must be a non-negative integer, got {value!r}"
            )
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError("early_exit_text must be a non-empty string")
        if self.signals_fn is not None and not callable(self.signals_fn):
            raise ValueError("signals_fn must be callable (steps -> signals) or None")
