"""LangChain's own ``ContextEditingMiddleware(ClearToolUsesEdit)`` as replay strategies.

Load with ``tokenlean replay --plugin benchmarks.peers_langchain`` from the repository root.
``langchain-context-editing`` is LangChain's default (100k trigger, keep 3); the ``-30k`` and
``-10k`` variants match the triggers of tokenlean's ``context-editor`` strategies, keep 3.
"""

from __future__ import annotations

from typing import Any

from tokenlean.replay.strategies import register


def _clear_tool_uses(trigger: int | None = None) -> Any:
    def build() -> list[Any]:
        from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware

        edit = (
            ClearToolUsesEdit() if trigger is None else ClearToolUsesEdit(trigger=trigger, keep=3)
        )
        return [ContextEditingMiddleware(edits=[edit])]

    return build


register(
    "langchain-context-editing",
    _clear_tool_uses(),
    "LangChain ContextEditingMiddleware(ClearToolUsesEdit()) at its defaults (100k, keep 3)",
)
register(
    "langchain-context-editing-30k",
    _clear_tool_uses(30_000),
    "LangChain ClearToolUsesEdit(trigger=30_000, keep=3)",
)
register(
    "langchain-context-editing-10k",
    _clear_tool_uses(10_000),
    "LangChain ClearToolUsesEdit(trigger=10_000, keep=3)",
)
