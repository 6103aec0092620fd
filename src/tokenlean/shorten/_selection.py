"""What the selectors of each kind of text hand the line engine (:mod:`._lines`): a tier and a
rank for every line, the lines forced out and why, and the lines tied together; and the steps
every selector builds them with (the lines around others, tiers lowered, distances as ranks)."""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, filterfalse, pairwise, repeat
from operator import add, lt, sub

from tokenlean.shorten._report import Reason

__all__ = [
    "EDGE",
    "MUST",
    "NEAR",
    "PROSE",
    "REST",
    "Selection",
    "around",
    "assign",
    "distances",
    "ends",
]

#: Tiers, kept in this order: ``MUST`` lines always, the others while the budget lasts.
MUST, NEAR, EDGE, REST, PROSE = 0, 1, 2, 3, 4


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


def ends(items: Sequence[str]) -> set[int]:
    """The first and last non-blank lines."""
    filled = [i for i in (0, 1, 2) if i < len(items) and items[i].strip()]
    tail = [i for i in range(len(items) - 1, max(-1, len(items) - 4), -1) if items[i].strip()]
    return set(filled[:1] + tail[:1])


def around(indices: Iterable[int], width: int, n: int) -> set[int]:
    """The lines within ``width`` of any of ``indices`` (among ``0..n-1``)."""
    anchors = list(indices)
    # one C-level pass per offset, not a Python step per anchor (every line of a log of
    # pytest ``E`` lines is one)
    out: set[int] = set()
    for offset in range(-width, width + 1):
        out.update(map(add, anchors, repeat(offset)))
    if out and (min(out) < 0 or max(out) >= n):
        out.difference_update(filterfalse(range(n).__contains__, list(out)))
    return out


def assign(tiers: list[int], indices: Iterable[int], tier: int) -> None:
    """Lower each of ``indices`` to ``tier`` (C-level: every line of a log can be one)."""
    chosen = list(indices)
    if tiers and min(tiers) >= tier:  # the usual case: tiers are assigned lowest last
        deque(map(tiers.__setitem__, chosen, repeat(tier)), maxlen=0)
        return
    lowered = list(map(min, map(tiers.__getitem__, chosen), repeat(tier)))
    deque(map(tiers.__setitem__, chosen, lowered), maxlen=0)


def distances(anchors: Collection[int], n: int) -> list[int]:
    """Each line's distance to the nearest anchor line (``n`` when there is none).

    Filled stretch by stretch with slice assignments: one Python step per stretch between two
    anchors, not per line.
    """
    points = sorted(anchors)
    points = points[bisect_left(points, 0) : bisect_left(points, n)]
    if not points:
        return [n] * n
    dist = [0] * n
    dist[: points[0]] = range(points[0], 0, -1)
    # adjacent anchors leave nothing between them to fill: only the others take a step
    apart = map(lt, repeat(1), map(sub, points[1:], points))
    for left, right in compress(pairwise(points), apart):
        middle = (left + right) // 2  # up to here the left anchor is nearer (or as near)
        dist[left : middle + 1] = range(middle - left + 1)
        dist[middle + 1 : right] = range(right - middle - 1, 0, -1)
    dist[points[-1] :] = range(n - points[-1])
    return dist
