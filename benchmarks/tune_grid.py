"""The candidates the shortening defaults were chosen from, for ``benchmarks.loso``.

``python -m benchmarks.loso --plugin benchmarks.tune_grid -j 2`` replays every name in
``GRID`` over all dev trajectories and, leaving each source out in turn, picks the candidate
that bills least on the others while keeping recall and never costing more than no middleware
there, then reports it on the source left out (``benchmarks/loso.md``).

The knob is when a thread is first offered ``read_original``: the horizon (``min_remaining_calls``)
over which a first shortening must pay for re-writing the prompt cache, or ``"always"`` (the
tool from the first call). Both shorteners and the recommended stack are candidates.
"""

from __future__ import annotations

from typing import Any

from tokenlean.replay.strategies import register

HORIZONS = (4, 8, 16, 32, 64)


def _shorten(**kwargs: Any) -> Any:
    def factory() -> list[Any]:
        from tokenlean.langchain import ToolOutputShorteningMiddleware

        return [ToolOutputShorteningMiddleware(**kwargs)]

    return factory


def _recommended(**kwargs: Any) -> Any:
    def factory() -> list[Any]:
        from tokenlean.langchain import (
            ContextEditorMiddleware,
            LoopGuardMiddleware,
            ToolInputShorteningMiddleware,
            ToolOutputShorteningMiddleware,
        )
        from tokenlean.langchain.recommended import (
            EDITOR_TRIGGER_TOKENS,
            INPUT_HEAD_LINES,
            INPUT_MIN_TOKENS,
            INPUT_TAIL_LINES,
        )

        return [
            ToolInputShorteningMiddleware(
                retrieval_tool=False,
                min_tokens=INPUT_MIN_TOKENS,
                head_lines=INPUT_HEAD_LINES,
                tail_lines=INPUT_TAIL_LINES,
                **kwargs,
            ),
            ToolOutputShorteningMiddleware(**kwargs),
            ContextEditorMiddleware(trigger_tokens=EDITOR_TRIGGER_TOKENS, mode="cache_aware"),
            LoopGuardMiddleware(),
        ]

    return factory


GRID: list[str] = []
for horizon in HORIZONS:
    for stack, factory in (("shorten", _shorten), ("recommended", _recommended)):
        name = f"{stack}-h{horizon}"
        register(
            name, factory(min_remaining_calls=horizon), f"{stack}, horizon {horizon}", default=False
        )
        GRID.append(name)
for stack, factory in (("shorten", _shorten), ("recommended", _recommended)):
    register(
        f"{stack}-always",
        factory(offer_tool="always"),
        f"{stack}, tool always offered",
        default=False,
    )
    GRID.append(f"{stack}-always")
