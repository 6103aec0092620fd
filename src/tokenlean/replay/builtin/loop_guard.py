"""The ``loop-guard`` strategy: :class:`~tokenlean.langchain.LoopGuardMiddleware` with defaults."""

from __future__ import annotations

from tokenlean.replay._strategies import middleware, register

__all__: list[str] = []  # importing it registers its strategies: nothing to import by name

register(
    "loop-guard",
    middleware("tokenlean.langchain.loop_guard:LoopGuardMiddleware"),
    "stuck-pattern detection; nudge, then force a final answer, then end the run",
)
