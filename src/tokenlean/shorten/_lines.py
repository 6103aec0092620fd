"""The line engine: keep the lines that matter within a token budget and mark every gap.

Callers rank lines into tiers (:data:`MUST` are always kept) and may force some out (similar
runs, lines already shown, caret lines). Lines are then added tier by tier, nearest to the lines
that must stay first (so kept text grows in readable blocks), until the budget is spent; each
gap costs a marker, and a gap that saves less than its marker costs is filled back in. Sorting
aside, every step is a constant number of passes over the lines.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from functools import reduce
from itertools import filterfalse, repeat
from operator import add, gt, mul, not_, sub

from tokenlean.shorten._emit import emit
from tokenlean.shorten._markers import Retrieval, line_marker
from tokenlean.shorten._report import Omission, Reason
from tokenlean.shorten._selection import EDGE, MUST, Selection
from tokenlean.shorten._text import TOKENS_PER_LINE, Lines, index_from, line_cost

__all__ = ["render"]

_GIVE_UP = 64  # consecutive lines that do not fit before the fill stops looking
_MIN_GAP = 2.0  # a gap left out costs at least this many markers' worth of lines


def render(
    lines: Lines,
    selection: Selection,
    *,
    budget: float,
    retrieval: Retrieval,
    terms: Sequence[str] = (),
    long_line_chars: int = 1200,
    line_offset: int = 0,
) -> tuple[str, list[Omission]]:
    """The shortened text and its omissions (line numbers shifted by ``line_offset``)."""
    # every marker but the first names only its lines (the first says how to read them back)
    marker_cost = line_cost(line_marker("budget", 99, 100, 199, retrieval, hinted=True))
    costs = lines.costs()
    keep = _choose(costs, selection, budget, marker_cost)
    # a marker must save at least what it costs: a gap that does not is filled back in
    _fill_cheap_gaps(costs, keep, selection.forced, _MIN_GAP * marker_cost)
    return emit(lines, keep, selection, retrieval, terms, long_line_chars, line_offset)


def _choose(costs: list[float], sel: Selection, budget: float, marker_cost: float) -> list[bool]:
    # Per-line steps are C-level (map, filterfalse, set operations): a million lines is common.
    n, forced = len(costs), sel.forced
    open_ = list(filterfalse(forced.__contains__, range(n)))
    # a forced run starts at each forced line whose previous line is not forced
    forced_gaps = len(forced) - sum(map(forced.__contains__, map(sub, forced, repeat(1))))
    if sum(map(costs.__getitem__, open_)) + marker_cost * forced_gaps <= budget:
        return list(map(not_, map(forced.__contains__, range(n))))
    fill = _Fill(sel, costs, budget, marker_cost)
    # by tier, then rank; the sort is stable, so equal keys stay in line order
    key = list(map(add, map(mul, sel.tiers, repeat(n + 1)), sel.ranks))
    order = sorted(open_, key=key.__getitem__)
    musts = bisect_left(order, n + 1, key=key.__getitem__)  # MUST lines come first
    if sel.ties.keys().isdisjoint(order[:musts]):
        fill.keep_all(order[:musts])
        order = order[musts:]
    fill.run(order)
    return fill.keep


class _Fill:
    """Adds lines while the budget lasts; each gap left between kept lines costs a marker."""

    def __init__(self, sel: Selection, costs: list[float], budget: float, marker_cost: float):
        self.sel, self.costs, self.budget, self.marker_cost = sel, costs, budget, marker_cost
        self.keep = [False] * len(costs)
        self.spent, self.gaps = 0.0, 1

    def add(self, i: int) -> bool:
        """Keep line ``i`` (and the line tied to it) if it fits; MUST lines always fit."""
        keep, costs = self.keep, self.costs
        if keep[i]:
            return True
        tied = self.sel.ties.get(i)
        if tied is None or tied in self.sel.forced or keep[tied]:
            tied, lo, hi, added = i, i, i, costs[i]
        else:  # a line and the one tied to it (adjacent) come together
            lo, hi, added = min(i, tied), max(i, tied), costs[i] + costs[tied]
        delta = _group_delta(keep, lo, hi)
        total = self.spent + added + (self.gaps + delta) * self.marker_cost
        if total > self.budget and self.sel.tiers[i] != MUST:
            return False
        keep[i] = keep[tied] = True
        self.spent += added
        self.gaps += delta
        return True

    def keep_all(self, lines: list[int]) -> None:
        """Keep ``lines``, MUST lines tied to no other, as :meth:`add` would one by one (the
        costs summed in the same order), in C-level passes: a log can be all errors."""
        keep = self.keep
        if not lines or any(map(keep.__getitem__, lines)):
            deque(map(self.add, lines), maxlen=0)
            return
        self.spent = reduce(add, map(self.costs.__getitem__, lines), self.spent)
        deque(map(keep.__setitem__, lines, repeat(True)), maxlen=0)
        # each stretch left out is a gap: one starts at each line left out after a kept one
        self.gaps = (not keep[0]) + sum(map(gt, keep, keep[1:]))

    def run(self, order: Iterable[int]) -> None:
        misses = 0
        tiers = self.sel.tiers
        for i in order:
            if self.add(i):
                misses = 0
                continue
            if tiers[i] != MUST and self.full():  # nothing after it can fit (MUST lines come first)
                return
            if tiers[i] >= EDGE:
                misses += 1
                if misses >= _GIVE_UP:
                    return

    def full(self) -> bool:
        """Whether even the cheapest line (a blank one) closing a gap would exceed the budget:
        the bound :meth:`add` checks, with every term at its least."""
        return self.spent + TOKENS_PER_LINE + (self.gaps - 1) * self.marker_cost > self.budget


def _group_delta(keep: list[bool], lo: int, hi: int) -> int:
    """How the number of gaps changes when lines ``lo``..``hi`` are kept."""
    left = lo == 0 or keep[lo - 1]
    right = hi == len(keep) - 1 or keep[hi + 1]
    return -1 if left and right else (1 if not left and not right else 0)


def _fill_cheap_gaps(
    costs: list[float], keep: list[bool], forced: Mapping[int, Reason], marker_cost: float
) -> None:
    i, n = index_from(keep, False, 0), len(costs)
    while i < n:
        j = index_from(keep, True, i)
        if forced.keys().isdisjoint(range(i, j)) and sum(costs[i:j]) <= marker_cost:
            keep[i:j] = [True] * (j - i)
        i = index_from(keep, False, j)
