"""Replay strategies for :class:`tokenlean.langchain.TokenSavingMiddleware`.

- ``token-saving``: the reference defaults (head+tail compression of old tool outputs).
- ``token-saving-words``: plus tiered word compression with the offline heuristic classifier.
- ``token-saving-once``: the defaults with ``compress_once=True`` (one rewrite per output, in
  batches that pay back).
- ``token-saving-words-once``: word compression and ``compress_once=True`` together.
"""

from __future__ import annotations

from typing import Any

from tokenlean.replay._strategies import register


def _middleware(**settings: Any) -> list[Any]:
    from tokenlean.langchain.token_saving import TokenSavingMiddleware

    return [TokenSavingMiddleware(**settings)]


def _words(**settings: Any) -> list[Any]:
    from tokenlean.token_saving import make_heuristic_classifier

    return _middleware(
        enable_perplexity_compression=True,
        perplexity_classifier=make_heuristic_classifier(),
        **settings,
    )


register(
    "token-saving",
    _middleware,
    "TokenSavingMiddleware, reference defaults (head+tail of old tool outputs)",
)
register(
    "token-saving-words",
    _words,
    "TokenSavingMiddleware + tiered heuristic word compression (rewrites at each tier)",
)
register(
    "token-saving-once",
    lambda: _middleware(compress_once=True),
    "TokenSavingMiddleware(compress_once=True): one rewrite per output, batched when it pays",
)
register(
    "token-saving-words-once",
    lambda: _words(compress_once=True),
    "TokenSavingMiddleware + heuristic word compression, compress_once=True",
    default=False,
)
