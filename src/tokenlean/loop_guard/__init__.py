"""The loop guard's core: agent steps, stuck patterns, and loop signals.

Framework-free pieces of :class:`tokenlean.langchain.LoopGuardMiddleware` (and of the reference
``signals_fn`` of :class:`~tokenlean.langchain.TokenSavingMiddleware`): steps
(:mod:`~tokenlean.loop_guard._steps`) and the canonical forms they are compared by
(:mod:`~tokenlean.loop_guard._canonical`), the stuck patterns (:mod:`~tokenlean.loop_guard._detect`)
and the three loop-likelihood signals (:mod:`~tokenlean.loop_guard._signals`).
"""

from __future__ import annotations

from tokenlean.loop_guard._detect import Detection, LoopDetector, detect_stuck, loop_signals
from tokenlean.loop_guard._steps import Step, build_steps

__all__ = ["Detection", "LoopDetector", "Step", "build_steps", "detect_stuck", "loop_signals"]
