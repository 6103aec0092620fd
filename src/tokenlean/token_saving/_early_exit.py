"""The early-exit nudge's rule: loop signals in, a yes or no out (framework-free).

A ``signals_fn`` maps the agent's steps (see :func:`tokenlean.loop_guard.build_steps`) to loop
signals in [0, 1]; :func:`loop_detected` reads ``streak``, ``hedge`` and ``diversity`` from them
(an absent, non-numeric or non-finite value counts as 0) with the reference's thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tokenlean import checks
from tokenlean.loop_guard import Step

__all__ = [
    "DEFAULT_EARLY_EXIT_TEXT",
    "DIVERSITY_THRESHOLD",
    "HEDGE_THRESHOLD",
    "STREAK_THRESHOLD",
    "EarlyExitPolicy",
    "SignalsFn",
    "loop_detected",
]

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
        wanted = "a non-negative integer"
        checks.integer(self.min_call_index, "early_exit_min_call_index", at_least=0, wanted=wanted)
        checks.text(self.text, "early_exit_text", blank=False)
        if self.signals_fn is not None:
            wanted = "callable (steps -> signals) or None"
            checks.function(self.signals_fn, "signals_fn", wanted=wanted)
