"""The ``shorten-inputs`` strategy: :class:`~tokenlean.langchain.ToolInputShorteningMiddleware`."""

from __future__ import annotations

from typing import Any

from tokenlean.replay._strategies import register


def _inputs() -> list[Any]:
    from tokenlean.langchain.input_shortening import ToolInputShorteningMiddleware

    return [ToolInputShorteningMiddleware()]


register(
    "shorten-inputs",
    _inputs,
    "cut long inputs of calls that have run to head and tail lines, at first sight (defaults)",
)
