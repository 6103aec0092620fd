"""Asking many lines whether they start with one of many prefixes, at C speed.

``str.startswith`` given a tuple tries every prefix on every line: with the fifty-odd openings
of source code that is most of what telling code from a log cost. A line can only start with
a prefix that starts with its own first character, so each line is asked about those alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat
from operator import itemgetter

__all__ = ["Prefixes"]

_FIRST = itemgetter(slice(0, 1))


class Prefixes:
    """Prefixes grouped by their first character (none may be empty)."""

    __slots__ = ("_by_first", "all")

    def __init__(self, prefixes: Iterable[str]) -> None:
        self.all = tuple(prefixes)
        grouped: dict[str, list[str]] = {}
        for prefix in self.all:
            grouped.setdefault(prefix[0], []).append(prefix)
        self._by_first = {first: tuple(group) for first, group in grouped.items()}

    def starting(self, lines: list[str]) -> list[bool]:
        """``[line.startswith(self.all) for line in lines]``."""
        asked = map(self._by_first.get, map(_FIRST, lines), repeat(()))
        return list(map(str.startswith, lines, asked))
