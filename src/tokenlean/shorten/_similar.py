"""Runs of lines that can go: similar lines, exact repeats, and lines already shown earlier.

Two lines are *similar* when they are equal once trimmed and stripped of digits:
``Downloading x (55 kB)`` and ``Downloading x (112 kB)`` are, ``test_a ... ok`` and
``test_b ... ok`` are not (their names differ, and a name is what a reader looks for). The whole
line is compared, never a prefix, so a long shared path does not merge unrelated lines.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Container
from dataclasses import dataclass
from itertools import compress, count, repeat
from operator import and_, eq, gt, not_, or_, sub

from tokenlean.shorten._records import is_record, may_be_records
from tokenlean.shorten._seen import Seen, key_length
from tokenlean.shorten._text import index_from

__all__ = ["Run", "seen_runs", "shapes", "shown_lines", "similar_runs"]

_DIGITS = b"0123456789"


@dataclass(frozen=True, slots=True)
class Run:
    """Lines ``start``..``end`` (inclusive, 0-based) of which ``drop`` may be left out."""

    start: int
    end: int
    drop: tuple[int, ...]


def shapes(text: str, items: list[str] | None = None) -> list[str]:
    """Each line of ``text`` trimmed and without digits (one byte-level pass over the text),
    but a record's (:func:`~tokenlean.shorten._records.is_record`: a table's row, whose
    numbers are what it says) that has the shape of a line next to it keeps its digits.
    ``items``: ``text.split("\\n")``, when the caller has it already."""
    raw = text.encode("utf-8", "surrogatepass").translate(None, _DIGITS)
    shaped = list(map(str.strip, raw.decode("utf-8", "surrogatepass").split("\n")))
    # only lines shaped like a neighbour are looked at (C-level passes find them)
    alike = list(compress(count(1), map(eq, shaped, shaped[1:])))
    alike = sorted(set(alike).union(map(sub, alike, repeat(1))))
    if alike:
        items = text.split("\n") if items is None else items
        maybe = may_be_records(list(map(items.__getitem__, alike)))
        for i in compress(alike, maybe):
            if is_record(items[i]):
                shaped[i] = items[i].strip()
    return shaped


def similar_runs(
    items: list[str], shaped: list[str], protected: Collection[int], min_run: int
) -> list[Run]:
    """Runs of at least ``min_run`` similar lines (``shaped`` holds their :func:`shapes`);
    each keeps its first and last line.

    A protected line (an error, a query match) is never dropped and ends a run, except that
    exact repeats of a protected line collapse too: the line itself still shows.
    """
    n = len(items)
    guarded = list(map(protected.__contains__, range(n)))
    # whether line i + 1 extends a run that line i is in: an exact repeat (a run from a
    # protected line), or a line of the same shape that is not protected (any other run);
    # C-level passes, so a log whose every line is a run of one costs no Python step per line
    repeats = [*map(eq, items, items[1:]), False]
    alike = [*map(and_, map(eq, shaped, shaped[1:]), map(not_, guarded[1:])), False]
    single = list(map(not_, map(or_, map(and_, guarded, repeats), map(gt, alike, guarded))))
    runs: list[Run] = []
    start = index_from(single, False, 0)
    while start < n:
        end = index_from(repeats if guarded[start] else alike, False, start)
        if end - start + 1 >= min_run and items[start].strip():
            runs.append(Run(start, end, tuple(range(start + 1, end))))
        start = index_from(single, False, end + 1)
    return runs


def seen_runs(
    items: list[str],
    seen: Container[str],
    protected: Collection[int],
    *,
    min_run: int,
    min_chars: int,
    filler: Collection[int] = (),
) -> list[Run]:
    """Runs holding at least ``min_run`` lines already shown earlier (``seen`` holds stripped
    lines). Blank and very short lines inside a run go with it, and so do ``filler`` lines
    (a page's boilerplate: one pointer per unchanged stretch, not many small ones); protected
    lines end it."""
    stripped = list(map(str.strip, items))
    # Runs are only looked for from the lines already shown, found with one set intersection
    # (or one question per distinct line): a large output that repeats nothing costs a few
    # C-level passes, not a call per line.
    shown = {line for line in shown_lines(stripped, seen) if key_length(line) >= min_chars}
    if not shown:
        return []

    def state(i: int) -> int:  # 2: seen, 1: neutral filler, 0: breaks a run
        if i in protected:
            return 0
        line = stripped[i]
        if line in shown:  # shown lines are at least min_chars long
            return 2
        if i in filler:
            return 1
        size = key_length(line)
        if size < min_chars:
            return 1 if size <= 3 else 0
        return 0

    starts = list(compress(range(len(stripped)), map(shown.__contains__, stripped)))
    return _runs_of(len(items), state, min_run, starts)


def shown_lines(lines: list[str], seen: Container[str]) -> set[str]:
    """The members of ``lines`` that ``seen`` holds (C-level when it is a set or a Seen)."""
    if isinstance(seen, Seen):  # its own lines and its parents' (what ``in`` would find)
        found = seen.lines.intersection(lines)
        if seen.parent is not None:
            found |= shown_lines(lines, seen.parent)
        return found - seen.unmatched if seen.unmatched else found
    if isinstance(seen, (set, frozenset)):
        return set(seen.intersection(lines))
    return {line for line in set(lines) if line in seen}


def _runs_of(n: int, state: Callable[[int], int], min_run: int, starts: list[int]) -> list[Run]:
    """The runs from the candidate ``starts`` (ascending; every line whose state is 2)."""
    runs: list[Run] = []
    done = 0
    for i in starts:
        if i < done or state(i) != 2:
            continue
        end, count, j = i, 1, i + 1
        while j < n and (s := state(j)):
            if s == 2:
                end, count = j, count + 1
            j += 1
        if count >= min_run:
            runs.append(Run(i, end, tuple(range(i, end + 1))))
        done = end + 1
    return runs
