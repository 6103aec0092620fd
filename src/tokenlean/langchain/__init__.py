"""LangChain 1.x adapters and middleware (needs the ``langchain`` extra)."""

from __future__ import annotations

from tokenlean.langchain._adapter import ViewCache, apply_edits, from_view, to_view
from tokenlean.langchain.budget import TokenBudgetMiddleware
from tokenlean.langchain.context_editor import ContextEditorMiddleware
from tokenlean.langchain.input_shortening import ToolInputShorteningMiddleware
from tokenlean.langchain.loop_guard import LoopGuardMiddleware
from tokenlean.langchain.output_shortening import ToolOutputShorteningMiddleware
from tokenlean.langchain.recommended import recommended_middleware
from tokenlean.langchain.token_saving import TokenSavingMiddleware, build_steps_from_messages

__all__ = [
    "ContextEditorMiddleware",
    "LoopGuardMiddleware",
    "TokenBudgetMiddleware",
    "TokenSavingMiddleware",
    "ToolInputShorteningMiddleware",
    "ToolOutputShorteningMiddleware",
    "ViewCache",
    "apply_edits",
    "build_steps_from_messages",
    "from_view",
    "recommended_middleware",
    "to_view",
]
