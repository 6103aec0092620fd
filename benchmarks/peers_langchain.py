"""LangChain's own ``ContextEditingMiddleware(ClearToolUsesEdit)`` as replay strategies.

Load with ``tokenlean replay --plugin benchmarks.peers_langchain`` from the repository root.
``langchain-context-editing`` is LangChain's default (100k trigger, keep 3); the ``-30k`` and
``-10k`` variants match the triggers of tokenlean's ``context-editor`` strategies, keep 3.

LangChain counts its trigger with ``count_tokens_approximately`` (about four characters a token,
messages only), tokenlean with its fitted estimate over system prompt, tool schemas and messages,
so the same number is not quite the same trigger. The ``-est`` variants give LangChain tokenlean's
counter, so both fire on the same count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokenlean.replay._strategies import register


def _estimate(messages: Sequence[Any]) -> int:
    from tokenlean.langchain._adapter import to_view
    from tokenlean.tokens import EstimateCounter, count_request

    return count_request(to_view(messages), EstimateCounter())


def _clear_tool_uses(trigger: int | None = None, *, same_counter: bool = False) -> Any:
    def build() -> list[Any]:
        from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware

        edit = (
            ClearToolUsesEdit() if trigger is None else ClearToolUsesEdit(trigger=trigger, keep=3)
        )
        counter = _estimate if same_counter else None
        return [ContextEditingMiddleware(edits=[edit], token_counter=counter)]

    return build


register(
    "langchain-context-editing",
    _clear_tool_uses(),
    "LangChain ContextEditingMiddleware(ClearToolUsesEdit()) at its defaults (100k, keep 3)",
)
for _trigger in (30_000, 10_000):
    _k = f"{_trigger // 1000}k"
    register(
        f"langchain-context-editing-{_k}",
        _clear_tool_uses(_trigger),
        f"LangChain ClearToolUsesEdit(trigger={_trigger:_}, keep=3)",
    )
    register(
        f"langchain-context-editing-{_k}-est",
        _clear_tool_uses(_trigger, same_counter=True),
        f"LangChain ClearToolUsesEdit(trigger={_trigger:_}, keep=3), tokenlean's token estimate",
        default=False,
    )
