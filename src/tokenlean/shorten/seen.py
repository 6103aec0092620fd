"""What the reader already has: lines and words it was shown earlier.

Words are what an agent copies from output into its next command or edit: identifiers, dotted
names, paths and numbers. They are split out with one byte-level ``translate`` and
``str.split`` (no regex), so this stays cheap on large text.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from functools import lru_cache

_WORD_CHARS = frozenset(string.ascii_letters + string.digits + "_./-\n")
_TO_SPACE = bytes(i for i in range(256) if chr(i) not in _WORD_CHARS)
_TABLE = bytes.maketrans(_TO_SPACE, b" " * len(_TO_SPACE))


def word_lines(text: str) -> list[list[str]]:
    """For each line of ``text``, its identifier-like words (see :func:`is_word`)."""
    ascii_text = text.encode("utf-8", "surrogatepass").translate(_TABLE).decode("ascii")
    return [[w for w in (raw.strip("./-") for raw in line.split()) if is_word(w)]
            for line in ascii_text.split("\n")]  # fmt: skip


def is_word(word: str) -> bool:
    """Words worth tracking: 3+ characters with a letter, or numbers of 2+ digits."""
    if len(word) < 2:
        return False
    if word.isdigit():
        return True
    return len(word) >= 3 and not word.replace(".", "").replace("-", "").isdigit()


@lru_cache(maxsize=4096)
def _extract(text: str, min_chars: int) -> tuple[frozenset[str], frozenset[str]]:
    """The stripped lines and the words of ``text`` (memoized: a transcript is re-read on
    every model call, and its messages rarely change)."""
    lines = frozenset(s for s in (line.strip() for line in text.split("\n")) if len(s) >= min_chars)
    return lines, frozenset(w for words in word_lines(text) for w in words)


class Seen:
    """Stripped lines and words the reader was already shown."""

    __slots__ = ("lines", "min_chars", "words")

    def __init__(self, *, min_chars: int = 8) -> None:
        self.lines: set[str] = set()
        self.words: set[str] = set()
        self.min_chars = min_chars

    def add(self, text: str) -> None:
        lines, words = _extract(text, self.min_chars)
        self.lines |= lines
        self.words |= words

    def add_all(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.add(text)

    def __contains__(self, line: object) -> bool:
        return line in self.lines
