"""Replay strategies for :func:`tokenlean.langchain.recommended.recommended_middleware`."""

from __future__ import annotations

from typing import Any

from tokenlean.replay._strategies import register

__all__: list[str] = []  # importing it registers its strategies: nothing to import by name


def _recommended(provider: str) -> Any:
    def build() -> list[Any]:
        from tokenlean.langchain.recommended import recommended_middleware

        return recommended_middleware(provider)  # type: ignore[arg-type]  # a known preset

    return build


register(
    "recommended-anthropic",
    _recommended("anthropic"),
    "recommended_middleware('anthropic'): shorten outputs and inputs at first sight",
)
register(
    "recommended-openai",
    _recommended("openai"),
    "recommended_middleware('openai'): the same stack planned for OpenAI-style caching",
)
