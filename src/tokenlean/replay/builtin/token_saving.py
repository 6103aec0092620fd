"""Replay strategies for :class:`tokenlean.langchain.TokenSavingMiddleware`.

- ``token-saving``: the reference's behaviour, ``compress_once=False`` (head+tail compression of
  each old tool output as it leaves the recent window).
- ``token-saving-words``: plus tiered word compression with the offline heuristic classifier.
- ``token-saving-once``: the defaults, ``compress_once=True`` (each compression written into the
  prompt the call it pays back, or never).
- ``token-saving-words-once``: word compression and ``compress_once=True`` together.
"""

from __future__ import annotations

from typing import Any

from tokenlean.replay._strategies import register

__all__: list[str] = []  # importing it registers its strategies: nothing to import by name


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
    lambda: _middleware(compress_once=False),
    "TokenSavingMiddleware(compress_once=False): the reference's rewrites of old tool outputs",
)
register(
    "token-saving-words",
    lambda: _words(compress_once=False),
    "TokenSavingMiddleware + tiered heuristic word compression (rewrites at each tier)",
)
register(
    "token-saving-once",
    _middleware,
    "TokenSavingMiddleware(): defaults, each compression written when it pays, or never",
)
register(
    "token-saving-words-once",
    lambda: _words(compress_once=True),
    "TokenSavingMiddleware + heuristic word compression, compress_once=True",
    default=False,
)
