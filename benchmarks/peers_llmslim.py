"""``llmslim==0.11.2``'s ``LLMSlimToolOutputMiddleware`` as replay strategies.

Install with ``pip install -r benchmarks/requirements-peers.txt`` and load from the repository
root with ``tokenlean replay --plugin benchmarks.peers_llmslim``. ``llmslim`` is the middleware
at its defaults (results over 1,500 tokens kept to 35%, at least 1,000 tokens);
``llmslim-aggressive`` shortens every result over 300 tokens to 35% (at least 150), to compare
with tokenlean's ``shorten`` at a similar reach. A missing package makes both unavailable.
"""

from __future__ import annotations

from typing import Any

from tokenlean.replay._strategies import register


def _llmslim(**kwargs: Any) -> Any:
    def factory() -> list[Any]:
        from llmslim.integrations.langchain_agents import LLMSlimToolOutputMiddleware

        return [LLMSlimToolOutputMiddleware(**kwargs)]

    return factory


register(
    "llmslim",
    _llmslim(),
    "llmslim 0.11.2 LLMSlimToolOutputMiddleware() at its defaults",
)
register(
    "llmslim-aggressive",
    _llmslim(min_tokens=300, min_keep=150),
    "llmslim 0.11.2 shortening every result over 300 tokens",
    default=False,
)
