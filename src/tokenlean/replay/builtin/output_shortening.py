"""Replay strategies for :class:`tokenlean.langchain.ToolOutputShorteningMiddleware`.

``shorten`` runs the defaults. ``shorten-conservative`` only removes what costs the reader
nothing it could use (lines it was already shown, similar-line runs, caret lines) and cuts only
very long results. ``shorten-aggressive`` uses small budgets, for comparisons at the reach of
other shorteners' aggressive settings. ``shorten-no-dedupe`` switches off pointing to lines
already shown, to measure what that is worth. ``shorten-with-tool`` lists ``read_original`` from
the first call, as a thread under a coding agent's long system prompt has it: the replays' short
recorded first prompts otherwise leave most threads without it, where only what the prompt
still shows is left out.
"""

from __future__ import annotations

from typing import Any

from tokenlean.replay._strategies import Factory, middleware, register
from tokenlean.shorten import ShortenSettings

__all__ = ["AGGRESSIVE", "CONSERVATIVE"]

CONSERVATIVE = ShortenSettings(max_tokens=1500, code_max_tokens=3000, code_keep_percent=90)
AGGRESSIVE = ShortenSettings(max_tokens=100, code_max_tokens=250, code_keep_percent=25)


def _shortening(**kwargs: Any) -> Factory:
    return middleware(
        "tokenlean.langchain.output_shortening:ToolOutputShorteningMiddleware", **kwargs
    )


register("shorten", _shortening(), "shorten each long tool result at first sight (defaults)")
register(
    "shorten-conservative",
    _shortening(options=CONSERVATIVE),
    "shorten: drop only repeats, similar runs and carets; cut only results over 1.5k tokens",
)
register(
    "shorten-aggressive",
    _shortening(options=AGGRESSIVE),
    "shorten with small budgets (100 tokens, code 250 or 25%)",
    default=False,
)
register(
    "shorten-with-tool",
    _shortening(offer_tool="always"),
    "shorten, read_original listed from the first call (as under a coding agent's long prompt)",
    default=False,
)
register(
    "shorten-no-dedupe",
    _shortening(dedupe=False),
    "shorten without pointing to lines already shown",
    default=False,
)
