"""LangChain 1.x adapters and middleware (needs the ``langchain`` extra)."""

from __future__ import annotations

from tokenlean.langchain.adapter import apply_edits, to_view
from tokenlean.langchain.budget import TokenBudgetMiddleware

__all__ = ["TokenBudgetMiddleware", "apply_edits", "to_view"]
