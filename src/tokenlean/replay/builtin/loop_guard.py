"""The ``loop-guard`` strategy: :class:`~tokenlean.langchain.LoopGuardMiddleware` with defaults."""

from __future__ import annotations

from typing import Any

from tokenlean.replay._strategies import register


def _loop_guard() -> list[Any]:
    from tokenlean.langchain.loop_guard import LoopGuardMiddleware

    return [LoopGuardMiddleware()]


register(
    "loop-guard",
    _loop_guard,
    "stuck-pattern detection; nudge, then force a final answer, then end the run",
)
