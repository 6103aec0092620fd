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
from dataclasses import dataclass, field
from functools import reduce
from itertools import compress, filterfalse, repeat
from operator import add, eq, gt, itemgetter, lt, mul, not_, sub

from tokenlean.shorten._markers import Retrieval, inline_marker, line_marker, note, trace_marker
from tokenlean.shorten._report import Omission, Reason
from tokenlean.shorten._text import Lines, line_cost, line_costs

MUST, NEAR, EDGE, REST, PROSE = 0, 1, 2, 3, 4
_GIVE_UP = 64  # consecutive lines that do not fit before the fill stops looking
_MIN_GAP = 2.0  # a gap left out costs at least this many markers' worth of lines


@dataclass(frozen=True, slots=True)
class Selection:
    """What to keep: tier and rank per line, lines forced out, and tied line pairs.

    ``repeats`` maps lines forced out as ``"trace"`` to the first and last line (0-based) of
    the traceback lines they repeat. A ``whole`` selection keeps every line not forced out,
    long lines included.
    """

    tiers: Sequence[int]
    ranks: Sequence[int]
    forced: Mapping[int, Reason]
    ties: Mapping[int, int]
    repeats: Mapping[int, tuple[int, int]] = field(default_factory=dict)
    whole: bool = False


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
    costs = line_costs(lines.items)
    keep = _choose(costs, selection, budget, marker_cost)
    # a marker must save at least what it costs: a gap that does not is filled back in
    _fill_cheap_gaps(costs, keep, selection.forced, _MIN_GAP * marker_cost)
    return _emit(lines, keep, selection, retrieval, terms, long_line_chars, line_offset)


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
        for i in order:
            if self.add(i):
                misses = 0
            elif self.sel.tiers[i] >= EDGE:
                misses += 1
                if misses >= _GIVE_UP:
                    return


def _group_delta(keep: list[bool], lo: int, hi: int) -> int:
    """How the number of gaps changes when lines ``lo``..``hi`` are kept."""
    left = lo == 0 or keep[lo - 1]
    right = hi == len(keep) - 1 or keep[hi + 1]
    return -1 if left and right else (1 if not left and not right else 0)


def _fill_cheap_gaps(
    costs: list[float], keep: list[bool], forced: Mapping[int, Reason], marker_cost: float
) -> None:
    i, n = _next_left_out(keep, 0), len(costs)
    while i < n:
        j = _next_kept(keep, i)
        if forced.keys().isdisjoint(range(i, j)) and sum(costs[i:j]) <= marker_cost:
            keep[i:j] = [True] * (j - i)
        i = _next_left_out(keep, j)


def _next_kept(keep: list[bool], start: int) -> int:
    """The first kept line from ``start`` on (``len(keep)`` when there is none)."""
    try:
        return keep.index(True, start)
    except ValueError:
        return len(keep)


def _next_left_out(keep: list[bool], start: int) -> int:
    """The first line left out from ``start`` on (``len(keep)`` when there is none)."""
    try:
        return keep.index(False, start)
    except ValueError:
        return len(keep)


def _emit(
    lines: Lines,
    keep: list[bool],
    selection: Selection,
    retrieval: Retrieval,
    terms: Sequence[str],
    long_line_chars: int,
    offset: int,
) -> tuple[str, list[Omission]]:
    """The kept lines (long ones cut), a marker for each stretch left out, and one note at the
    end for the caret lines left out."""
    forced = selection.forced
    out: list[str] = []
    omissions: list[Omission] = []
    carets = 0
    hinted = False  # whether a marker above already says how to read the original back
    i, n = 0, lines.count
    while i < n:
        if keep[i]:  # a stretch of kept lines at once: a log can be all errors
            j = _next_left_out(keep, i)
            cuts = _add_kept(out, lines, i, j, terms, long_line_chars, offset, retrieval, hinted)
            hinted = hinted or bool(cuts)
            omissions.extend(cuts)
            i = j
            continue
        j = _next_kept(keep, i)
        unforced: Reason = "budget"
        reasons: set[Reason] = set(map(forced.get, range(i, j), repeat(unforced)))
        if reasons == {"caret"}:
            carets += j - i
        else:
            marker, gap = _gap(lines, selection, reasons, i, j, retrieval, offset, hinted=hinted)
            out.append(marker)
            hinted = True
            omissions.append(gap)
        i = j
    if carets:
        at = len(out) - 1 if out and out[-1] == "" else len(out)  # before a final newline
        out.insert(at, note("caret", carets, retrieval))
        omissions.append(Omission("caret", carets, 0, 0))
    return "\n".join(out), omissions


def _add_kept(
    out: list[str],
    lines: Lines,
    i: int,
    j: int,
    terms: Sequence[str],
    limit: int,
    offset: int,
    retrieval: Retrieval,
    hinted: bool,
) -> list[Omission]:
    """Add kept lines ``i``..``j-1`` to ``out``, those longer than ``limit`` cut; the cuts."""
    cuts: list[Omission] = []
    longer = compress(range(i, j), map(lt, repeat(limit), map(len, lines.items[i:j])))
    for k in longer:
        out.extend(lines.items[i:k])
        line, cut = _long_line(lines, k, terms, limit, offset, retrieval, hinted or bool(cuts))
        out.append(line)
        cuts.append(cut)
        i = k + 1
    out.extend(lines.items[i:j])
    return cuts


def _long_line(
    lines: Lines,
    i: int,
    terms: Sequence[str],
    limit: int,
    offset: int,
    retrieval: Retrieval,
    hinted: bool,
) -> tuple[str, Omission]:
    """Kept line ``i``, longer than ``limit`` characters, cut (:func:`cut_line`)."""
    number = lines.first_of(i) + 1 + offset
    line, cut = cut_line(lines.items[i], terms, limit, number, retrieval, hinted, lines.holes_in(i))
    return line, Omission("long-line", cut, number, number, "chars")


def _gap(
    lines: Lines,
    selection: Selection,
    reasons: set[Reason],
    i: int,
    j: int,
    retrieval: Retrieval,
    offset: int,
    *,
    hinted: bool,
) -> tuple[str, Omission]:
    """The marker for lines ``i``..``j-1`` left out (for ``reasons``, caret lines aside) and its
    omission: a pointer to the tracebacks they mostly copy, or their count and why they went."""
    rest = reasons - {"caret"}
    reason: Reason = next(iter(rest)) if len(rest) == 1 else "budget"
    # in the whole text's numbers (an excerpt's gap lines stand for many lines each)
    first, last = lines.first_of(i) + 1 + offset, lines.last_of(j - 1) + 1 + offset
    count = last - first + 1
    indent = _indent_of(lines.items[i:j])
    origin = _copied(selection, selection.forced, i, j, count)
    if origin is None:
        marker = line_marker(reason, count, first, last, retrieval, indent, hinted=hinted)
        return marker, Omission(reason, count, first, last)
    shown = (lines.first_of(origin[0]) + 1 + offset, lines.last_of(origin[1]) + 1 + offset)
    copies, others = origin[2], count - origin[3]
    marker = trace_marker(
        count, first, last, shown, copies, others, retrieval, indent, hinted=hinted
    )
    return marker, Omission("trace", count, first, last)


def _copied(
    selection: Selection, forced: Mapping[int, Reason], i: int, j: int, count: int
) -> tuple[int, int, int, int] | None:
    """When lines ``i``..``j-1`` (``count`` lines of the whole text) are mostly copies of
    tracebacks shown above: the first and last line of what they copy, how many copies of one
    traceback they are (0: of several), and how many of the stretch's lines they fill."""
    # C-level passes: a stretch can hold most of a long output
    stretch = range(i, j)
    traced = list(compress(stretch, map(eq, map(forced.get, stretch), repeat("trace"))))
    if not traced or 2 * len(traced) < count:
        return None
    origins = set(map(selection.repeats.__getitem__, traced))
    first = min(map(itemgetter(0), origins))
    last = max(map(itemgetter(1), origins))
    # a copy starts at each traced line whose previous line is not traced (``i - 1`` never is)
    starts = len(traced) - sum(map(set(traced).__contains__, map(sub, traced, repeat(1))))
    return first, last, starts if len(origins) == 1 else 0, len(traced)


def _indent_of(block: Sequence[str]) -> str:
    for line in block:
        if line.strip():
            return line[: len(line) - len(line.lstrip())][:16]
    return ""


def cut_line(
    line: str,
    terms: Sequence[str],
    limit: int,
    number: int,
    retrieval: Retrieval,
    hinted: bool = False,
    holes: Sequence[tuple[int, int]] = (),
) -> tuple[str, int]:
    """``line`` cut to about ``limit`` characters: its head, its tail and windows around the
    first query matches; returns the new line and how many characters went.

    ``holes``: the line was already cut short (see :class:`~tokenlean.shorten._huge.Excerpt`):
    at each ``(offset, count)``, past the head and before the tail kept here, ``count``
    characters are missing; the marker over that offset counts them too.
    """
    head, tail, window = limit // 2, limit // 6, limit // 10
    spans = [(0, head), (len(line) - tail, len(line))]
    low = line.lower()
    for term in terms:
        at = low.find(term, head)
        if 0 <= at < len(line) - tail:
            span = (max(0, at - window), min(len(line), at + len(term) + window))
            if not any(span[0] <= at <= span[1] for at, _ in holes):
                spans.append(span)
        if len(spans) >= 5:
            break
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    parts: list[str] = []
    cut, pos = 0, 0
    for start, end in merged:
        if start > pos:
            gone = start - pos + sum(count for at, count in holes if pos <= at <= start)
            parts.append(inline_marker(gone, number, retrieval, hinted=hinted))
            hinted = True
            cut += gone
        parts.append(line[start:end])
        pos = end
    return "".join(parts), cut
