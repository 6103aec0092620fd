"""What the reader already has: the stripped lines of everything it was shown earlier, and a
digest of each whole tool result it was shown (so a result that repeats one word for word can
point back to it)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from itertools import compress

from tokenlean._caches import byte_bounded

__all__ = ["Seen", "key_length", "result_digest", "view_keys"]


@byte_bounded()
def _lines_of(text: str, min_chars: int) -> frozenset[str]:
    """The stripped lines of ``text`` worth matching (memoized: a transcript is re-read on
    every model call, and its messages rarely change)."""
    stripped = list(map(str.strip, text.split("\n")))
    # C-level passes, no Python step per line: keep the lines at least ``min_chars`` long
    return frozenset(compress(stripped, map(min_chars.__le__, map(len, stripped))))


#: Marks a line as the content of a numbered file view (its number left out), so a later view
#: matches it by what it holds while other text never does: a file first printed without
#: numbers and then viewed with them is viewed for its numbers, which must stay. A view's line
#: keeps its indentation: a line the agent re-indented (or wrote at the wrong depth in an edit)
#: is a change it has to see, not a line already shown.
_VIEW = "\x00"


@byte_bounded(max_entries=1024)
def _view_lines_of(text: str, min_chars: int) -> frozenset[str]:
    lines = text.split("\n")
    long_enough = map(min_chars.__le__, map(len, map(str.strip, lines)))
    return frozenset(map(_VIEW.__add__, compress(map(str.rstrip, lines), long_enough)))


def view_keys(items: Iterable[str]) -> list[str]:
    """A view's lines (numbers left out) as :meth:`Seen.add_view` keeps them."""
    return [_VIEW + line.rstrip() for line in items]


def key_length(key: str) -> int:
    """How long the line behind a key is, a view line's mark and indentation left out (what
    decides whether it is too short to mean anything)."""
    return len(key[1:].lstrip()) if key[:1] == _VIEW else len(key)


class Seen:
    """Stripped lines the reader was already shown; shorter lines are too common to count.

    A ``parent`` holds lines shown before these: it is read, never written, so a long
    transcript's lines are gathered once and a call's own additions stay apart. ``results`` maps
    :func:`result_digest` of each whole tool result shown to the id of the call it answered (the
    first such call). ``unmatched`` lines never count as shown here, whoever showed them.
    """

    __slots__ = ("lines", "min_chars", "parent", "results", "unmatched")

    def __init__(
        self,
        *,
        min_chars: int = 8,
        parent: Seen | None = None,
        unmatched: frozenset[str] = frozenset(),
    ) -> None:
        self.lines: set[str] = set()
        self.results: dict[str, str] = {}
        self.min_chars = min_chars
        self.parent = parent
        self.unmatched = unmatched

    def add_result(self, digest: str, call_id: str) -> None:
        if self.result(digest) is None:
            self.results[digest] = call_id

    def result(self, digest: str) -> str | None:
        """The call whose result had ``digest``, earliest first (``None``: never shown)."""
        if self.parent is not None:
            found = self.parent.result(digest)
            if found is not None:
                return found
        return self.results.get(digest)

    def add(self, text: str) -> None:
        self.lines |= _lines_of(text, self.min_chars)

    def add_view(self, content: str) -> None:
        """Add what a numbered file view showed of the file (:func:`view_keys` matches it)."""
        self.lines |= _view_lines_of(content, self.min_chars)

    def view_lines(self, content: str) -> frozenset[str]:
        """The keys :meth:`add_view` would add for ``content``."""
        return _view_lines_of(content, self.min_chars)

    def add_all(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.add(text)

    def __contains__(self, line: object) -> bool:
        if line in self.unmatched:
            return False
        return line in self.lines or (self.parent is not None and line in self.parent)


def result_digest(tool: str, text: str) -> str:
    """Names a whole result of ``tool``: equal digests mean the same tool gave the same text."""
    data = f"{tool}\n{text}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).hexdigest()
