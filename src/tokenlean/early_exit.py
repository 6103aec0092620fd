"""The early-exit nudge's rule: loop signals in, a yes or no out (framework-free).

A ``signals_fn`` maps the agent's steps (see :func:`tokenlean.loops.build_steps`) to loop
signals in [0, 1]; :func:`loop_detected` reads ``streak``, ``hedge`` and ``diversity`` from them
(an absent, non-numeric or non-finite value counts as 0) with the reference's thresholds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from tokenlean.loops import Step

DEFAULT_EARLY_EXIT_MIN_CALL_INDEX = 40
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


def check_early_exit(min_call_index: int, text: str, signals_fn: object) -> None:
    """Raise ``ValueError`` for early-exit settings the middleware cannot use."""
    if (
        isinstance(min_call_index, bool)
        or not isinstance(min_call_index, int)
        or min_call_index < 0
    ):
        raise ValueError(
            f"early_exit_min_call_index must be a non-negative integer, got {min_call_index!r}"
        )
    if not isinstance(text, str) or not text.strip():
        raise ValueError("early_exit_text must be a non-empty string")
    if signals_fn is not None and not callable(signals_fn):
        raise ValueError("signals_fn must be callable (steps -> signals) or None")
