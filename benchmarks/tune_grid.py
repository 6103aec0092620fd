"""The candidates the shortening defaults were chosen from, for ``benchmarks.loso``.

``python -m benchmarks.loso --plugin benchmarks.tune_grid -j 2`` replays every name in
``GRID`` over all dev trajectories and, leaving each source out in turn, picks the candidate
that bills least on the others while keeping recall and never costing more than no middleware
there, then reports it on the source left out (``benchmarks/loso.md``).

Two knobs, for the output shortener alone and inside the recommended stack:

- ``view_keep_tokens``: the size up to which a file view with line numbers stays whole
  (3,000, 6,000 or 12,000 tokens);
- ``offer_tool``: ``when_it_pays`` (``read_original`` joins the tools once the thread's cuts
  have saved enough to pay for the cache re-write) or ``always`` (from the first call).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tokenlean.replay._strategies import register
from tokenlean.shorten._options import DEFAULT_OPTIONS

VIEWS = (3000, 6000, 12000)
OFFERS = ("when_it_pays", "always")


def _factory(stack: str, view: int, offer: str) -> Any:
    def factory() -> list[Any]:
        from tokenlean.langchain import (
            ToolInputShorteningMiddleware,
            ToolOutputShorteningMiddleware,
            recommended_middleware,
        )

        options = replace(DEFAULT_OPTIONS, view_keep_tokens=view)
        if stack == "shorten":
            return [ToolOutputShorteningMiddleware(options=options, offer_tool=offer)]
        out: list[Any] = []
        for m in recommended_middleware("anthropic"):  # the same stack, these two knobs set
            if isinstance(m, ToolOutputShorteningMiddleware):
                m = ToolOutputShorteningMiddleware(
                    store=m.stores, pricing=m.policy.pricing, options=options, offer_tool=offer
                )
            elif isinstance(m, ToolInputShorteningMiddleware) and offer == "always":
                m = ToolInputShorteningMiddleware(
                    store=m.stores,
                    retrieval_tool=False,
                    min_tokens=m.policy.min_tokens,
                    head_lines=m.policy.head_lines,
                    tail_lines=m.policy.tail_lines,
                    offer_tool=offer,
                )
            out.append(m)
        return out

    return factory


GRID: list[str] = []
for view in VIEWS:
    for offer in OFFERS:
        for stack in ("shorten", "recommended"):
            name = f"{stack}-view{view // 1000}k-{'paid' if offer == 'when_it_pays' else 'always'}"
            label = f"{stack}, views whole to {view} tokens, tool offered {offer}"
            register(name, _factory(stack, view, offer), label, default=False)
            GRID.append(name)
