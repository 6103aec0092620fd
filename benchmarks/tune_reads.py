"""The candidates ``listing_keep_tokens`` and ``page_lines`` were chosen from, for
``benchmarks.loso``.

``python -m benchmarks.loso --plugin benchmarks.tune_reads -j 2 --out benchmarks/loso_reads.md``
replays the recommended stack (Anthropic pricing, everything else as it ships) with each pair
below over all dev trajectories and, leaving each source out in turn, picks the one that bills
least on the others while keeping recall there and never costing more than no middleware, then
reports it on the source left out.

- ``listing_keep_tokens``: the size up to which a listing (``ls -l``, ``git status --short``,
  paths one per line) stays whole (1,000, as plain text does, or 3,000);
- ``page_lines``: the span from which a stretch of source code asked for without line numbers
  (``sed -n '1,200p' f``) is kept as the whole file would be, outline and what the call names
  (100, 150, 200 or 300 lines; ``never``: such stretches always stay whole).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from benchmarks._common import recommended_with
from tokenlean.replay._strategies import register
from tokenlean.shorten._options import DEFAULT_OPTIONS

NEVER = 1 << 30
PAIRS = (
    (1000, NEVER),
    (3000, NEVER),
    (1000, 150),
    (3000, 100),
    (3000, 150),
    (3000, 200),
    (3000, 300),
)


def _factory(listing: int, page: int) -> Any:
    def factory() -> list[Any]:
        options = replace(DEFAULT_OPTIONS, listing_keep_tokens=listing, page_lines=page)
        return recommended_with(options=options)

    return factory


GRID: list[str] = []
for listing, page in PAIRS:
    pages = "never" if page == NEVER else str(page)
    name = f"recommended-listing{listing // 1000}k-page{pages}"
    label = f"recommended, listings whole to {listing:,} tokens, pages from {pages} lines"
    register(name, _factory(listing, page), label, default=False)
    GRID.append(name)
