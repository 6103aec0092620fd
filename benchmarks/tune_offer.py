"""The candidates issue 22's retrieval-tool default was chosen from, for ``benchmarks.loso``.

``python -m benchmarks.loso --plugin benchmarks.tune_offer -j 2`` replays each over all dev
trajectories and, leaving each source out in turn, picks the one that bills least on the others
while keeping recall and never costing more than no middleware there (``benchmarks/loso.md``).

One knob, inside the recommended stack as shipped (``inputs`` included): when ``read_original``
joins a thread's tool list. ``start_share`` is the share of the first prompt under which the
tool is offered from the first call (else only at a call whose cache is cold anyway):

- ``offer1``: 1% (the default: the schema is negligible there);
- ``offer5``: 5%;
- ``offer-always``: from the first call whatever the prompt.
"""

from __future__ import annotations

from typing import Any

from benchmarks._common import recommended_with
from tokenlean.replay._strategies import register

CANDIDATES = {"offer1": 0.01, "offer5": 0.05, "offer-always": None}


def _factory(share: float | None) -> Any:
    def factory() -> list[Any]:
        if share is None:
            return recommended_with(offer_tool="always")
        return recommended_with(offer_tool="when_it_pays", start_share=share)

    return factory


GRID: list[str] = []
for name, share in CANDIDATES.items():
    label = (
        "tool from the first call"
        if share is None
        else f"tool from the first call under {share:.0%}"
    )
    register(name, _factory(share), f"recommended stack, {label}", default=False)
    GRID.append(name)
