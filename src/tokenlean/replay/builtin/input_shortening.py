"""The ``shorten-inputs`` strategy: :class:`~tokenlean.langchain.ToolInputShorteningMiddleware`."""

from __future__ import annotations

from tokenlean.replay._strategies import middleware, register

__all__: list[str] = []  # importing it registers its strategies: nothing to import by name

register(
    "shorten-inputs",
    middleware("tokenlean.langchain.input_shortening:ToolInputShorteningMiddleware"),
    "cut long inputs of calls that have run to head and tail lines, at first sight (defaults)",
)
