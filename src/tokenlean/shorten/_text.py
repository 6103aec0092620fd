"""A text split into lines once, with offsets, so every later scan is linear and cheap."""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate, chain, repeat
from operator import add, mul
from string import ascii_letters

__all__ = [
    "TOKENS_PER_CHAR",
    "TOKENS_PER_LINE",
    "Lines",
    "estimate_tokens",
    "index_from",
    "is_sentence",
    "letter_count",
    "line_cost",
    "lower_in_place",
]

#: Tokens per character (outside indentation) and per line, fitted on shared/data against
#: o200k_base: a line costs about ``0.27 * len(line.lstrip()) + 0.7`` tokens.
TOKENS_PER_CHAR = 0.27
TOKENS_PER_LINE = 0.7
#: "İ", the one character whose ``lower()`` is longer (two characters) in current Unicode.
_LONGER_LOWER = "\u0130"
#: The Kelvin sign, the one character outside ASCII whose ``lower()`` is in ASCII ("k").
_ASCII_LOWER = "\u212a"
#: What stands for every character outside ASCII in :meth:`Lines.find_all`'s ASCII copies.
_STAND_IN = "?"
_ASCII_LETTERS = ascii_letters.encode("ascii")
#: Hits of one needle found one by one before the rest are found in bulk, when they came at
#: least once every ``_DENSE_CHARS`` characters (copying the rest of the text to split it
#: costs more than finding sparse hits one by one).
_FEW_HITS = 64
_DENSE_CHARS = 1000


def index_from(flags: list[bool], value: bool, start: int) -> int:
    """The first index from ``start`` on whose flag is ``value`` (``len(flags)`` when none),
    found at C speed: a stretch of kept lines or of a run can be most of a long output."""
    try:
        return flags.index(value, start)
    except ValueError:
        return len(flags)


def is_sentence(line: str, scan: int = 300) -> bool:
    """A line of prose: seven or more words, mostly letters, in lower case somewhere early."""
    head = line.strip()[:scan]
    if head.startswith(('File "', "at ", "Traceback")) or head.count(" ") < 6:
        return False
    return letter_count(head) >= 0.6 * len(head) and any(map(str.islower, head[:40]))


def letter_count(text: str) -> int:
    """How many characters of ``text`` are letters (``str.isalpha``), at C speed."""
    if text.isascii():  # the common case: delete the letters and see how many went
        raw = text.encode("ascii")
        return len(raw) - len(raw.translate(None, _ASCII_LETTERS))
    return sum(map(str.isalpha, text))


def line_cost(line: str) -> float:
    """Estimated tokens of one line and its newline (indentation is nearly free in BPE)."""
    return TOKENS_PER_CHAR * len(line.lstrip()) + TOKENS_PER_LINE


def _costs(widths: list[int]) -> list[float]:
    """Each line's :func:`line_cost` from its length without indentation (C-level iteration:
    cheap on a million lines)."""
    return list(map(add, map(mul, repeat(TOKENS_PER_CHAR), widths), repeat(TOKENS_PER_LINE)))


def estimate_tokens(text: str) -> int:
    """A fast estimate of a whole text's tokens from its characters."""
    if not text:
        return 0
    return _estimate(list(map(len, map(str.lstrip, text.split("\n")))))


def _estimate(widths: list[int]) -> int:
    """:func:`estimate_tokens` of the lines of these lengths without indentation."""
    return max(1, round(TOKENS_PER_CHAR * sum(widths) + TOKENS_PER_LINE * len(widths)))


def lower_in_place(text: str) -> str:
    """``text`` lower-cased with the same length, so offsets into it hold for the copy."""
    if _LONGER_LOWER in text:  # kept as it is, and the rest lowered at C speed
        lowered = _LONGER_LOWER.join(part.lower() for part in text.split(_LONGER_LOWER))
    else:
        lowered = text.lower()
    if len(lowered) != len(text):  # another such character (a newer Unicode): per char
        lowered = "".join(ch if len(ch.lower()) != 1 else ch.lower() for ch in text)
    return lowered


def _ascii_copy(text: str, *, lower: bool) -> str:
    """``text`` (lower-cased) with :data:`_STAND_IN` for each character outside ASCII, but the
    Kelvin sign lower-cased, as :func:`lower_in_place` makes it "k"."""
    if lower and _ASCII_LOWER in text:
        text = text.replace(_ASCII_LOWER, "k")
    copy = text.encode("ascii", "replace").decode("ascii")  # one "?" per other character
    return copy.lower() if lower else copy


def _find(hay: str, needle: str, start: int = 0) -> int:
    """``hay.find(needle, start)``, sooner for a needle ending in blanks (``"\\nE  "``):
    ``str.find`` skips ahead on a needle's last character, and a blank is on every line. The
    needle without them is looked for instead, and each of its first few matches checked (a
    match of the whole is one of them); past those, the whole is looked for from there."""
    trimmed = needle.rstrip(" ")
    if not trimmed or trimmed == needle:
        return hay.find(needle, start)
    at = hay.find(trimmed, start)
    for _ in range(_FEW_HITS):
        if at < 0 or hay.startswith(needle, at):
            return at
        at = hay.find(trimmed, at + 1)
    return at if at < 0 else hay.find(needle, at)


class Lines:
    """``text`` split on ``\\n`` with each line's start offset and a lazily lower-cased copy."""

    __slots__ = ("_ascii", "_lower", "_widths", "items", "starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.items = text.split("\n")
        # each line starts one past the previous line's end (C-level iteration: no Python step
        # per line, which matters on a million lines)
        ends = map(add, map(len, self.items), repeat(1))
        self.starts: list[int] = list(accumulate(ends, initial=0))
        self.starts.pop()
        self._lower: str | None = None
        self._ascii: dict[bool, str] = {}
        self._widths: list[int] | None = None

    @property
    def count(self) -> int:
        return len(self.items)

    @property
    def total(self) -> int:
        """How many lines the whole text has (an :class:`~tokenlean.shorten._huge.Excerpt` holds
        only some of them)."""
        return len(self.items)

    def tokens(self) -> int:
        """:func:`estimate_tokens` of the text, from the lines split once already."""
        return _estimate(self.widths()) if self.text else 0

    def costs(self) -> list[float]:
        """:func:`line_cost` of every line."""
        return _costs(self.widths())

    def widths(self) -> list[int]:
        """Each line's length without its indentation (measured once: sizes and costs share it)."""
        if self._widths is None:
            self._widths = list(map(len, map(str.lstrip, self.items)))
        return self._widths

    def lower(self) -> str:
        """The text lower-cased, with the same length (so offsets are shared)."""
        if self._lower is None:
            self._lower = lower_in_place(self.text)
        return self._lower

    def first_of(self, index: int) -> int:
        """The 0-based number, in the whole text, of the first line line ``index`` stands for."""
        return index

    def last_of(self, index: int) -> int:
        """The 0-based number, in the whole text, of the last line line ``index`` stands for."""
        return index

    def holes_in(self, index: int) -> tuple[tuple[int, int], ...]:
        """Where line ``index`` was cut short and how many characters it lost there (never,
        here)."""
        return ()

    def index_at(self, offset: int) -> int:
        """The index of the line holding character ``offset``."""
        return bisect_right(self.starts, offset) - 1

    def end_of(self, index: int) -> int:
        """The offset of the newline that ends line ``index`` (or the text's end)."""
        return self.starts[index] + len(self.items[index])

    def find_all(self, needle: str, *, lower: bool = False, limit: int | None = None) -> list[int]:
        """Indices of lines containing ``needle`` (each line once), by ``str.find``."""
        hay = self._hay(needle, lower)
        out: list[int] = []
        # per hit, the steps of index_at and end_of inline: a keyword can be on many lines
        starts, items = self.starts, self.items
        plain = needle.rstrip(" ") in ("", needle)
        may_be_dense = limit is None and "\n" not in needle[1:]
        start = first = hay.find(needle) if plain else _find(hay, needle)
        while start >= 0:
            index = bisect_right(starts, start) - 1
            out.append(index)
            if limit is not None and len(out) >= limit:
                break
            if may_be_dense and len(out) == _FEW_HITS and start - first < _FEW_HITS * _DENSE_CHARS:
                return out + self._lines_holding(hay, needle, index + 1)
            after = starts[index] + len(items[index]) + 1
            start = hay.find(needle, after) if plain else _find(hay, needle, after)
        return out

    def _hay(self, needle: str, lower: bool) -> str:
        """The text (lower-cased) to look for ``needle`` in. For an ASCII ``needle`` without
        :data:`_STAND_IN` in a text that is not all ASCII, a copy in which that character
        stands for each other one: the same length and the same hits, and every scan of a
        text of one byte per character is faster (a few characters outside ASCII make the
        whole text two or four bytes per character)."""
        if self.text.isascii() or not needle.isascii() or _STAND_IN in needle:
            return self.lower() if lower else self.text
        hay = self._ascii.get(lower)
        if hay is None:
            hay = self._ascii[lower] = _ascii_copy(self.text, lower=lower)
        return hay

    def _lines_holding(self, hay: str, needle: str, index: int) -> list[int]:
        """Indices of the lines from ``index`` on that hold ``needle``, in C-level passes (for a
        needle found on most lines: a Python step per hit costs more). ``needle`` has no
        newline but maybe its first character, so the line of each occurrence holds no other
        one that starts before it ends."""
        pieces = hay[self.starts[index] :].split(needle) if index < self.count else [""]
        pieces.pop()  # what follows the last occurrence
        # each occurrence's line: the newlines before it, counted piece by piece
        steps = map(
            add, map(str.count, pieces, repeat("\n")), chain((0,), repeat(needle.count("\n")))
        )
        found = accumulate(steps, initial=index)
        next(found)  # ``index`` itself
        if needle[:1] == "\n":  # each occurrence ends another line
            return list(found)
        return list(dict.fromkeys(found))
