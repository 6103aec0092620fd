"""The line engine's output: the kept lines, each stretch left out as one marker.

Stretches of kept lines go out at once (a log can be all errors); only lines over the limit are
cut one by one, keeping their head, tail and query matches (:func:`cut_line`). A stretch left
out is a marker saying how many lines went and why, or a pointer to the traceback it copies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import compress, repeat
from operator import eq, itemgetter, lt, sub

from tokenlean.shorten._markers import Retrieval, inline_marker, line_marker, note, trace_marker
from tokenlean.shorten._report import Omission, Reason
from tokenlean.shorten._selection import Selection
from tokenlean.shorten._text import Lines, index_from

__all__ = ["cut_line", "emit"]


def emit(
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
            j = index_from(keep, False, i)
            cuts = _add_kept(out, lines, i, j, terms, long_line_chars, offset, retrieval, hinted)
            hinted = hinted or bool(cuts)
            omissions.extend(cuts)
            i = j
            continue
        j = index_from(keep, True, i)
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
