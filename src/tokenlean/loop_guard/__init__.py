"""The loop guard's core: agent steps, stuck patterns, and loop signals.

Framework-free pieces of :class:`tokenlean.langchain.LoopGuardMiddleware` (and of the reference
``signals_fn`` of :class:`~tokenlean.langchain.TokenSavingMiddleware`): steps
(:mod:`~tokenlean.loop_guard._steps`) and the canonical forms they are compared by
(:mod:`~tokenlean.loop_guard._canonical`), the stuck patterns
(:mod:`~tokenlean.loop_guard._patterns`) and the detector that holds their thresholds
(:mod:`~tokenlean.loop_guard._detect`), the three loop-likelihood signals
(:mod:`~tokenlean.loop_guard._signals`); the ladder of responses every adapter climbs
(:mod:`~tokenlean.loop_guard._ladder`) and its log (:mod:`~tokenlean.loop_guard._log`).
"""

from __future__ import annotations

from tokenlean.loop_guard._detect import Detection, LoopDetector, detect_stuck, loop_signals
from tokenlean.loop_guard._guard import LoopGuard, LoopGuardArguments
from tokenlean.loop_guard._ladder import (
    RESPONSES,
    Episode,
    Ladder,
    Reaction,
    Response,
    Text,
    default_end,
    default_final,
    default_nudge,
)
from tokenlean.loop_guard._log import LoopEvent, LoopGuardStats, LoopLog
from tokenlean.loop_guard._step import Step
from tokenlean.loop_guard._steps import StepScan, build_steps

__all__ = [
    "RESPONSES",
    "Detection",
    "Episode",
    "Ladder",
    "LoopDetector",
    "LoopEvent",
    "LoopGuard",
    "LoopGuardArguments",
    "LoopGuardStats",
    "LoopLog",
    "Reaction",
    "Response",
    "Step",
    "StepScan",
    "Text",
    "build_steps",
    "default_end",
    "default_final",
    "default_nudge",
    "detect_stuck",
    "loop_signals",
]
