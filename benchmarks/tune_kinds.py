"""Candidates for the content-kind budgets of the output shortener, for ``benchmarks.loso``.

``python -m benchmarks.loso --plugin benchmarks.tune_kinds -j 2`` replays each name in ``GRID``
(the shortener alone and the recommended stack, with a larger keep-whole size for file views
with line numbers, and for documents) over every dev trajectory, and picks by the worst source.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tokenlean.replay.strategies import register
from tokenlean.shorten.options import DEFAULT_OPTIONS

VARIANTS: dict[str, dict[str, int]] = {
    "view6k": {"view_keep_tokens": 6000},
    "view12k": {"view_keep_tokens": 12000},
    "view12k-text2k": {"view_keep_tokens": 12000, "text_keep_tokens": 2000},
}


def _factory(stack: str, changes: dict[str, int]) -> Any:
    def factory() -> list[Any]:
        from tokenlean.langchain import ToolOutputShorteningMiddleware, recommended_middleware

        options = replace(DEFAULT_OPTIONS, **changes)
        if stack == "shorten":
            return [ToolOutputShorteningMiddleware(options=options)]
        stack_ = recommended_middleware("anthropic")
        return [
            ToolOutputShorteningMiddleware(options=options)
            if isinstance(m, ToolOutputShorteningMiddleware)
            else m
            for m in stack_
        ]

    return factory


GRID: list[str] = []
for label, changes in VARIANTS.items():
    for stack in ("shorten", "recommended"):
        name = f"{stack}-{label}"
        register(name, _factory(stack, changes), f"{stack}, {changes}", default=False)
        GRID.append(name)
