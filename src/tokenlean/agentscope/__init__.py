"""tokenlean for AgentScope 2 agents: its capabilities as AgentScope middleware.

::

    from agentscope.agent import Agent
    from tokenlean.agentscope import recommended_middleware

    agent = Agent(..., middlewares=recommended_middleware("anthropic"))

Each middleware translates the agent's context to the neutral view and back; the decisions are
the one core's, as on every other way in (:mod:`tokenlean.pipeline`, the context editor, the
loop guard's ladder, the budget ledger). Needs ``pip install 'tokenlean[agentscope]'``.
"""

from __future__ import annotations

try:
    import agentscope  # noqa: F401  # a clear message instead of a deep import error
except ImportError as error:  # pragma: no cover - exercised where the extra is absent
    raise ImportError(
        "tokenlean.agentscope needs AgentScope 2: pip install 'tokenlean[agentscope]'"
    ) from error

from tokenlean.agentscope._tool import read_original_tool
from tokenlean.agentscope._view import read as to_view
from tokenlean.agentscope.budget import ReplyBudgetControlMiddleware
from tokenlean.agentscope.context_editor import ContextEditorMiddleware
from tokenlean.agentscope.loop_guard import LoopGuardMiddleware
from tokenlean.agentscope.recommended import recommended_middleware
from tokenlean.agentscope.shortening import (
    ShorteningStats,
    ToolInputShorteningMiddleware,
    ToolOutputShorteningMiddleware,
)

__all__ = [
    "ContextEditorMiddleware",
    "LoopGuardMiddleware",
    "ReplyBudgetControlMiddleware",
    "ShorteningStats",
    "ToolInputShorteningMiddleware",
    "ToolOutputShorteningMiddleware",
    "read_original_tool",
    "recommended_middleware",
    "to_view",
]
