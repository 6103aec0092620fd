"""A small grid of shortener variants to show ``benchmarks.loso`` at work.

``python -m benchmarks.loso --plugin benchmarks.loso_grid_demo -j 2`` replays every name in
``GRID``. Each variant changes one setting of :class:`ToolOutputShorteningMiddleware`.
"""

from __future__ import annotations

from typing import Any

from tokenlean.replay._strategies import register
from tokenlean.replay.builtin.output_shortening import CONSERVATIVE


def _shortening(**kwargs: Any) -> Any:
    def factory() -> list[Any]:
        from tokenlean.langchain.output_shortening import ToolOutputShorteningMiddleware

        return [ToolOutputShorteningMiddleware(**kwargs)]

    return factory


register(
    "shorten-mt300",
    _shortening(max_tokens=300),
    "shorten with a 300-token budget",
    default=False,
)
register(
    "shorten-min400",
    _shortening(min_tokens=400),
    "shorten only results over 400 tokens",
    default=False,
)
register(
    "shorten-no-tool",
    _shortening(retrieval_tool=False),
    "shorten without the read_original tool (no schema added to every call)",
    default=False,
)

register(
    "shorten-conservative-no-tool",
    _shortening(options=CONSERVATIVE, retrieval_tool=False),
    "shorten-conservative without the read_original tool",
    default=False,
)

GRID = [
    "shorten",
    "shorten-conservative",
    "shorten-mt300",
    "shorten-min400",
    "shorten-no-tool",
    "shorten-conservative-no-tool",
]
