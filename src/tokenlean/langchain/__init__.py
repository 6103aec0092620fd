"""LangChain 1.x adapters and middleware (needs the ``langchain`` extra)."""

from __future__ import annotations

from tokenlean.langchain.adapter import apply_edits, to_view

__all__ = ["apply_edits", "to_view"]
