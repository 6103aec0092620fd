"""The published reference ``TokenSavingMiddleware`` (``reasonblocks==0.2.5``) as a replay strategy.

Install with ``pip install -r benchmarks/requirements-peers.txt`` and load from the repository
root with ``tokenlean replay --plugin benchmarks.peers_reasonblocks``. ``reasonblocks`` is the
package's ``TokenSavingMiddleware()`` at its defaults (the same settings as ``token-saving``);
``reasonblocks-words`` turns its word compression on with tokenlean's offline heuristic
classifier (the same settings and classifier as ``token-saving-words``).
"""

from __future__ import annotations

from typing import Any

from tokenlean.replay._strategies import register


def _reasonblocks() -> list[Any]:
    from reasonblocks import TokenSavingMiddleware

    return [TokenSavingMiddleware()]


def _reasonblocks_words() -> list[Any]:
    from reasonblocks import TokenSavingMiddleware

    from tokenlean.token_saving._words import make_heuristic_classifier

    return [
        TokenSavingMiddleware(
            enable_perplexity_compression=True,
            perplexity_classifier=make_heuristic_classifier(),
        )
    ]


register(
    "reasonblocks",
    _reasonblocks,
    "reasonblocks 0.2.5 TokenSavingMiddleware() at its defaults",
)
register(
    "reasonblocks-words",
    _reasonblocks_words,
    "reasonblocks 0.2.5 with word compression on (tokenlean's heuristic classifier)",
    default=False,
)
