"""The candidates ``view_context_lines`` was chosen from, for ``benchmarks.loso``.

``python -m benchmarks.loso --plugin benchmarks.tune_focus -j 2 --out
benchmarks/loso_focus.md`` replays every name in ``GRID`` over all dev trajectories and,
leaving each source out in turn, picks the candidate that bills least on the others while
keeping recall and never costing more than no middleware there, then reports it on the source
left out.

One knob, inside the recommended stack (everything else as it ships): ``view_context_lines``,
the lines kept on each side of the focus of a window a file tool chose (SWE-agent's
``open f 1474``, an edit's hundred-line echo) and of a query match in a long file view (5 to
100; at 100 a window is never cut). Only SWE-agent shows such windows, so leaving it out is
the test that matters, and it is blind: on the other sources the candidates differ only where
a long view keeps the lines around a query match (Claude Code bills 0.699 of none from 30 lines
on, 0.700 below), so held out, SWE-agent gets 100 and bills 0.836, as before the focus. Picked
on all sources: 20, the fewest that loses no reference on SWE-agent (recall 0.967 at 10, 0.962
at 5, 0.978 from 20 on), billing it 0.801.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from benchmarks._common import recommended_with
from tokenlean.replay._strategies import register
from tokenlean.shorten._options import DEFAULT_OPTIONS

CANDIDATES = (5, 10, 20, 30, 50, 100)


def _factory(lines: int) -> Any:
    def factory() -> list[Any]:
        return recommended_with(options=replace(DEFAULT_OPTIONS, view_context_lines=lines))

    return factory


GRID: list[str] = []
for lines in CANDIDATES:
    name = f"recommended-context{lines}"
    label = f"recommended, {lines} lines kept on each side of a window's focus"
    register(name, _factory(lines), label, default=False)
    GRID.append(name)
