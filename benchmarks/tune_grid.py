"""The candidates the shortening defaults were chosen from, for ``benchmarks.loso``.

``python -m benchmarks.loso --plugin benchmarks.tune_grid -j 2`` replays every name in
``GRID`` over all dev trajectories and, leaving each source out in turn, picks the candidate
that bills least on the others while keeping recall and never costing more than no middleware
there, then reports it on the source left out (``benchmarks/loso.md``).

One knob, for the output shortener alone and inside the recommended stack (everything else
as the stack ships it, ``read_original`` offered as it decides; ``benchmarks/loso_offer.md``
checks that decision the same way): ``view_keep_tokens``, the size up to which a file view with
line numbers or a read the agent asked for stays whole (3,000, 6,000 or 12,000 tokens; and 500,
where almost every view is cut as source code is: not a default anyone would ship, but the
bound on what smaller views could save on each source).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from benchmarks._common import recommended_with
from tokenlean.replay._strategies import register
from tokenlean.shorten._options import DEFAULT_OPTIONS

VIEWS = (500, 3000, 6000, 12000)


def _factory(stack: str, view: int) -> Any:
    def factory() -> list[Any]:
        options = replace(DEFAULT_OPTIONS, view_keep_tokens=view)
        if stack == "shorten":
            from tokenlean.langchain import ToolOutputShorteningMiddleware

            return [ToolOutputShorteningMiddleware(options=options)]
        return recommended_with(options=options)  # the same stack, this knob set

    return factory


GRID: list[str] = []
for view in VIEWS:
    for stack in ("shorten", "recommended"):
        name = f"{stack}-view{view // 1000}k" if view >= 1000 else f"{stack}-view{view}"
        label = f"{stack}, views and asked-for reads whole to {view} tokens"
        register(name, _factory(stack, view), label, default=False)
        GRID.append(name)
