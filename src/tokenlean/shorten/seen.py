"""What the reader already has: the stripped lines of everything it was shown earlier."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache


@lru_cache(maxsize=4096)
def _lines_of(text: str, min_chars: int) -> frozenset[str]:
    """The stripped lines of ``text`` worth matching (memoized: a transcript is re-read on
    every model call, and its messages rarely change)."""
    return frozenset(s for s in (line.strip() for line in text.split("\n")) if len(s) >= min_chars)


class Seen:
    """Stripped lines the reader was already shown; shorter lines are too common to count.

    A ``parent`` holds lines shown before these: it is read, never written, so a long
    transcript's lines are gathered once and a call's own additions stay apart.
    """

    __slots__ = ("lines", "min_chars", "parent")

    def __init__(self, *, min_chars: int = 8, parent: Seen | None = None) -> None:
        self.lines: set[str] = set()
        self.min_chars = min_chars
        self.parent = parent

    def add(self, text: str) -> None:
        self.lines |= _lines_of(text, self.min_chars)

    def add_all(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.add(text)

    def __contains__(self, line: object) -> bool:
        return line in self.lines or (self.parent is not None and line in self.parent)
