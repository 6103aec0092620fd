"""Huge texts: cut to a bounded set of windows before the line-by-line passes.

A tool output of many megabytes (a 50 MB build log, a million-line listing) would cost seconds
in the shortener's dozen passes per line, and every one of its thousands of error lines would
be kept. Above ``ShortenSettings.window_above_chars`` the text is first cut to an
:class:`Excerpt`: its first and last lines, and windows of lines around its first and last
error lines and query matches. Each stretch left out becomes one gap line, which the shortener
always leaves out and marks with the whole text's line numbers, so ``read_original`` can fetch
it back. The error lines are found with ``str.find`` over lower-cased chunks of the text, from
each end until enough are found, so a log full of errors costs a few chunks and a log without
any costs one C-level pass; every later step sees only the excerpt.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

from tokenlean.shorten._classify import _ERROR, _ERROR_KEYS, SCAN_CHARS
from tokenlean.shorten._options import ShortenSettings
from tokenlean.shorten._text import Lines, lower_in_place

__all__ = ["GAP", "Excerpt", "windowed"]

#: The line standing for a stretch left out (no keyword, never "seen", unlike any real line).
GAP = "\x00\x00\x00\x00"
_HEAD_LINES = 40
_TAIL_LINES = 200  # summaries, exit codes and the last traceback are at the end
_BEFORE = 12  # lines kept above an anchor: a traceback's frames sit above its exception
_AFTER = 6
_QUERY_TERMS = 4  # query terms looked for (each one is a pass over the text)
_QUERY_ANCHORS = 8  # query matches kept from each end
#: The most characters a window reaches over (its anchor line aside): head and tail, other.
_EDGE_CHARS = 1 << 17
_WINDOW_CHARS = 1 << 15
#: Longer lines keep their head and tail, half of this each (at least four times the
#: shortener's ``long_line_chars``, so cutting the line later works as on the whole line).
_LINE_CHARS = 1 << 14
_CHUNK = 1 << 16  # lower-cased at a time: small enough to stay in cache across the keys
#: Lines starting ``E  `` (pytest's error lines) are found by their newline.
_KEYS = (*_ERROR_KEYS, "\ne  ")
_OVERLAP = max(map(len, _KEYS)) - 1


class Excerpt(Lines):
    """Some lines of a huge text; ``origin`` holds each one's 0-based number in the whole text,
    ``spans`` how many lines each :data:`GAP` line stands for, and ``holes`` where very long
    lines were cut short and how many characters each lost there."""

    __slots__ = ("gaps", "holes", "origin", "spans", "whole_count")

    def __init__(
        self,
        items: list[str],
        origin: list[int],
        spans: dict[int, int],
        holes: dict[int, tuple[tuple[int, int], ...]],
        total: int,
    ):
        super().__init__("\n".join(items))
        self.origin = origin
        self.spans = spans
        self.holes = holes
        self.gaps = tuple(spans)
        self.whole_count = total

    @property
    def total(self) -> int:
        return self.whole_count

    def first_of(self, index: int) -> int:
        return self.origin[index]

    def last_of(self, index: int) -> int:
        return self.origin[index] + self.spans.get(index, 1) - 1

    def holes_in(self, index: int) -> tuple[tuple[int, int], ...]:
        return self.holes.get(index, ())


@dataclass(frozen=True, slots=True)
class _Window:
    """Lines ``first``..``last`` (0-based, inclusive) of the whole text: characters
    ``start``..``end`` (``end`` is the offset of the newline after them, or the text's end)."""

    first: int
    start: int
    last: int
    end: int


def windowed(text: str, terms: list[str], options: ShortenSettings) -> Excerpt | None:
    """``text`` cut to its windows, or ``None`` when it is not longer than
    ``options.window_above_chars``."""
    if len(text) <= options.window_above_chars:
        return None
    total = text.count("\n") + 1
    line_chars = max(_LINE_CHARS, 4 * options.long_line_chars)
    if total <= _HEAD_LINES + _TAIL_LINES:  # few lines, so long ones: only those are cut
        whole = [_Window(0, 0, total - 1, len(text))]
        return _build(text, whole, total, line_chars, terms[:_QUERY_TERMS])
    want = options.window_errors
    errors, queries, scanned = _scan(text, 0, len(text), terms[:_QUERY_TERMS], stop=want)
    first_errors, first_queries = errors[:want], queries[:_QUERY_ANCHORS]
    if scanned < len(text):  # the rest: from the end back, as far as it takes
        errors, queries, _ = _scan(text, scanned, len(text), terms[:_QUERY_TERMS], stop=-want)
    anchors = sorted(
        set(chain(first_errors, errors[-want:], first_queries, queries[-_QUERY_ANCHORS:]))
    )
    windows = [_window(text, 0, 0, 0, _HEAD_LINES - 1, _EDGE_CHARS, line_chars)]
    line, at = 0, 0
    for start in anchors:  # line numbers by counting newlines between anchors: one C pass
        line += text.count("\n", at, start)
        at = start
        windows.append(_window(text, start, line, _BEFORE, _AFTER, _WINDOW_CHARS, line_chars))
    last = text.rfind("\n") + 1
    windows.append(_window(text, last, total - 1, _TAIL_LINES - 1, 0, _EDGE_CHARS, line_chars))
    return _build(text, _merge(windows), total, line_chars, terms[:_QUERY_TERMS])


def _scan(
    text: str, start: int, end: int, terms: list[str], *, stop: int
) -> tuple[list[int], list[int], int]:
    """Line starts of error lines and of query matches in ``text[start:end]``, sorted, read in
    chunks forward (``stop > 0``) or backward (``stop < 0``) until ``abs(stop)`` error lines are
    found; also where the forward scan stopped."""
    errors: set[int] = set()
    queries: set[int] = set()
    checked: dict[int, bool] = {}
    if stop > 0:
        bounds = ((at, min(end, at + _CHUNK)) for at in range(start, end, _CHUNK))
    else:
        bounds = ((max(start, at - _CHUNK), at) for at in range(end, start, -_CHUNK))
    reached = start
    for low, high in bounds:
        _chunk(text, low, high, terms, errors, queries, checked)
        reached = max(reached, high)
        if len(errors) >= abs(stop):
            break
    return sorted(errors), sorted(queries), reached


def _chunk(
    text: str,
    low: int,
    high: int,
    terms: list[str],
    errors: set[int],
    queries: set[int],
    checked: dict[int, bool],
) -> None:
    """Add the error lines and query lines with a key starting in ``text[low:high]``."""
    lowered = lower_in_place(text[low : high + _OVERLAP])
    for key in (*_KEYS, *terms):
        is_error = key in _KEYS
        at = lowered.find(key)
        while 0 <= at < high - low:
            hit = low + at
            line_start = hit + 1 if key[0] == "\n" else text.rfind("\n", 0, hit) + 1
            line_end = text.find("\n", line_start)
            line_end = len(text) if line_end < 0 else line_end
            if not is_error:
                queries.add(line_start)
            else:
                confirmed = checked.get(line_start)
                if confirmed is None:
                    confirmed = checked[line_start] = _is_error(text, line_start, line_end)
                if confirmed:
                    errors.add(line_start)
            # the next line: a key starting with a newline may start at this line's end
            at = lowered.find(key, line_end - low)


def _is_error(text: str, start: int, end: int) -> bool:
    """What :func:`tokenlean.shorten._classify.classify` confirms as an error line."""
    return _ERROR.search(text[start : min(end, start + SCAN_CHARS)]) is not None


def _window(
    text: str, start: int, line: int, before: int, after: int, chars: int, line_chars: int
) -> _Window:
    """Line ``line`` (starting at offset ``start``) with up to ``before`` lines above it and
    ``after`` below, as long as those hold at most ``chars`` characters (each line counted as at
    most ``line_chars``, what is kept of it)."""
    first, low = line, start
    for _ in range(before):
        if low == 0:
            break
        above = text.rfind("\n", 0, low - 1) + 1
        chars -= min(low - above, line_chars)
        if chars < 0:
            break
        low, first = above, first - 1
    last, high = line, text.find("\n", start)
    high = len(text) if high < 0 else high
    for _ in range(after):
        if high >= len(text):
            break
        below = text.find("\n", high + 1)
        below = len(text) if below < 0 else below
        chars -= min(below - high, line_chars)
        if chars < 0:
            break
        high, last = below, last + 1
    return _Window(first, low, last, high)


def _merge(windows: list[_Window]) -> list[_Window]:
    """Overlapping or adjacent windows joined (``windows`` may come in any order)."""
    out: list[_Window] = []
    for window in sorted(windows, key=lambda w: w.first):
        if out and window.first <= out[-1].last + 1:
            if window.last > out[-1].last:
                out[-1] = _Window(out[-1].first, out[-1].start, window.last, window.end)
        else:
            out.append(window)
    return out


def _build(
    text: str, windows: list[_Window], total: int, line_chars: int, terms: list[str]
) -> Excerpt:
    """The excerpt of ``windows`` (in order, apart), a :data:`GAP` line between each two, and
    lines over ``line_chars`` cut short (see :func:`_cut_long`)."""
    items: list[str] = []
    origin: list[int] = []
    spans: dict[int, int] = {}
    holes: dict[int, tuple[tuple[int, int], ...]] = {}
    for k, window in enumerate(windows):
        if k:  # the stretch between this window and the previous one
            left_out = window.first - windows[k - 1].last - 1
            spans[len(items)] = left_out
            items.append(GAP)
            origin.append(windows[k - 1].last + 1)
        lines = text[window.start : window.end].split("\n")
        for i in [i for i, line in enumerate(lines) if len(line) > line_chars]:
            lines[i], holes[len(items) + i] = _cut_long(lines[i], line_chars, terms)
        items.extend(lines)
        origin.extend(range(window.first, window.last + 1))
    return Excerpt(items, origin, spans, holes, total)


def _cut_long(
    line: str, line_chars: int, terms: list[str]
) -> tuple[str, tuple[tuple[int, int], ...]]:
    """A line over ``line_chars`` kept in its head and tail (half of that each) and around the
    first match of each query term past its head; and its holes, ``(offset, characters
    missing there)`` in the line returned. The shortener cuts the line further as it would the
    whole line: what it keeps is always inside what is kept here."""
    half, reach = line_chars // 2, line_chars // 8
    keep = [(0, half), (len(line) - half, len(line))]
    if terms:
        lowered = lower_in_place(line[half : len(line) - half])
        for term in terms:
            at = lowered.find(term)
            if at >= 0:
                at += half
                keep.append((max(half, at - reach), min(len(line) - half, at + len(term) + reach)))
    keep.sort()
    parts: list[str] = []
    holes: list[tuple[int, int]] = []
    done = size = 0
    for start, end in keep:
        if start > done:
            holes.append((size, start - done))
        if end > done:
            piece = line[max(start, done) : end]
            parts.append(piece)
            size += len(piece)
            done = end
    return "".join(parts), tuple(holes)
