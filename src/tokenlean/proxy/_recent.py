"""The message lists of recent request bodies, so a history re-sent is not parsed again.

A client re-sends its whole history on every turn: the messages it sent last time come again,
byte for byte, with a few new ones after them. The scanner (:mod:`tokenlean.proxy._scan`) keeps
each body's list here under the text of its first message (a conversation's opening; several
lists under one, as a team's agents open alike), and on the next body with that opening
compares the kept list that shares the most with it, its whole text, separators included,
with the bytes at the same place: one ``memcmp``, not a parse nor a step per message. When the
client sent it again as it was, every kept message is taken as it was, parsed values included;
otherwise each kept message's own text is compared at its place, and only the messages that
differ are parsed. The values are shared by the requests that sent the same text, which is safe
because nothing in the proxy mutates a body it reads.

Bounded in lists and in the characters their texts hold (the parsed values take about as much
again); only ever a cache: a list evicted, or a conversation whose messages changed, is parsed.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from tokenlean._caches import LISTS_PER_OPENING, BoundedLru, Openings

__all__ = [
    "RECENT_MAX_BYTES",
    "RECENT_MAX_LISTS",
    "VALUES_MAX_BYTES",
    "VALUES_MIN_CHARS",
    "KeptList",
    "RecentLists",
    "RecentValues",
]

Items = list[tuple[Any, str]]  # (value, JSON text) of each message, in order
Span = tuple[int, int]

#: About 200 conversations of 100k-token histories, or a few of 200k tokens and more.
RECENT_MAX_BYTES = 128 * 2**20
RECENT_MAX_LISTS = 256
#: A body's other long values (``tools``, ``system``: tens of KB that come again on every
#: request) are kept too, the most recent first, in at most this many bytes; a value of fewer
#: characters than ``VALUES_MIN_CHARS`` is parsed again (that takes microseconds).
VALUES_MAX_BYTES = 32 * 2**20
VALUES_MAX = 64
VALUES_MIN_CHARS = 2048
#: An item's bytes beyond its characters: the headers of its text and its chunk, its span (a
#: tuple of two integers) and start, and the list slots that hold them.
_EMPTY = sys.getsizeof("")
_ITEM_BYTES = 2 * _EMPTY + sys.getsizeof((0, 0)) + 3 * sys.getsizeof(2**20) + 40


@dataclass(frozen=True, slots=True)
class KeptList:
    """A list's items; each item's text with what followed it up to the next item (its
    separator; the last item's text alone), as the client sent it; where each item lay in the
    body it came from; and how many bytes its texts take."""

    items: Items
    chunks: list[str]
    spans: list[Span]
    starts: list[int]
    size: int

    @classmethod
    def of(
        cls,
        items: Items,
        source: str,
        spans: list[Span],
        prior: KeptList | None = None,
        same: int = 0,
    ) -> KeptList:
        """The list whose items lie at ``spans`` of ``source`` (one span per item). ``prior``: a
        kept list whose first ``same`` items open this one too, each with the separator that
        followed it: their chunks are taken, not sliced again."""
        reused: list[str] = []
        if prior is not None:  # a chunk that ends one list ends this one only if it ends it too
            reused = prior.chunks[: min(same, len(prior.chunks) - 1, len(spans) - 1)]
        starts = list(map(itemgetter(0), spans))
        cut = zip(starts[len(reused) : -1], starts[len(reused) + 1 :], strict=True)
        chunks = reused + [source[start:end] for start, end in cut]
        if items:
            chunks.append(items[-1][1])
        chars = spans[-1][1] - spans[0][0] if spans else 0
        # the bytes a character of the body takes (1, 2 or 4), from its size: no pass over it
        width = max(1, (sys.getsizeof(source) - _EMPTY) // max(1, len(source)))
        return cls(items, chunks, spans, starts, chars * width)

    def spans_at(self, offset: int, count: int) -> list[Span]:
        """The first ``count`` items' spans in a text whose first item starts at ``offset``
        (most often where the body before held it: the same spans)."""
        shift = offset - self.starts[0] if self.starts else 0
        if not shift:
            return self.spans[:count]
        return [(start + shift, end + shift) for start, end in self.spans[:count]]


def _length(kept: KeptList) -> int:
    return len(kept.items)


class RecentLists:
    """Thread-safe LRU of message lists keyed by their first message's text (``max_lists``
    openings, each with up to ``per_opening`` lists)."""

    def __init__(
        self,
        max_lists: int = RECENT_MAX_LISTS,
        max_bytes: int = RECENT_MAX_BYTES,
        per_opening: int = LISTS_PER_OPENING,
    ):
        store: BoundedLru[str, tuple[tuple[KeptList, int], ...]]
        store = BoundedLru(max_entries=max_lists, max_bytes=max_bytes)
        self._kept: Openings[KeptList] = Openings(store, _length, per_opening)

    @property
    def size(self) -> int:
        """The estimated bytes of the lists kept."""
        return self._kept.size

    def find(self, first: str, shared: Callable[[KeptList], int]) -> tuple[KeptList | None, int]:
        """The list kept for a list opened by ``first`` that shares the most with it (``shared``
        of a kept list: how many leading items), if any, and that count."""
        return self._kept.find(first, shared)

    def put(self, kept: KeptList, found: KeptList | None = None, same: int = 0) -> None:
        """Keep ``kept`` (a whole list, its first item's text the key); ``found``, the kept list
        it shares ``same`` items with, goes if ``kept`` continues it."""
        if kept.items:
            # The values take about twice their texts (dicts, strings), the texts once more, and
            # the chunks (texts and separators) once again; each item has a span and a start.
            charge = 4 * kept.size + _ITEM_BYTES * len(kept.items)
            self._kept.put(kept.items[0][1], kept, charge, found, same)

    def clear(self) -> None:
        self._kept.clear()


class RecentValues:
    """Thread-safe LRU of long top-level values of recent bodies, by their key and JSON text:
    a body that sends one again as it was gets the kept value (and the kept text) without a
    parse. Bounded in values and in the bytes their texts hold (the values take about twice)."""

    def __init__(
        self,
        max_values: int = VALUES_MAX,
        max_bytes: int = VALUES_MAX_BYTES,
        min_chars: int = VALUES_MIN_CHARS,
    ):
        self.max_values = max_values
        self.max_bytes = max_bytes
        self.min_chars = min_chars
        self._items: OrderedDict[tuple[str, str], tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def candidates(self, key: str) -> list[tuple[str, Any]]:
        """The texts and values kept for ``key``, the most recently used first."""
        with self._lock:
            return [(t, v) for (k, t), (v, _) in reversed(self._items.items()) if k == key]

    def used(self, key: str, text: str) -> None:
        """Mark the value kept for ``key`` and ``text`` used (if it still is kept)."""
        with self._lock:
            if (key, text) in self._items:
                self._items.move_to_end((key, text))

    def put(self, key: str, text: str, value: Any) -> None:
        """Keep ``value``, read from ``text``, when ``text`` is long enough to be worth it."""
        charge = 3 * sys.getsizeof(text)
        if len(text) < self.min_chars or charge > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop((key, text), None)
            if old is not None:
                self._bytes -= old[1]
            self._items[(key, text)] = (value, charge)
            self._bytes += charge
            while len(self._items) > self.max_values or self._bytes > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped

    @property
    def size(self) -> int:
        """The estimated bytes of the values kept."""
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
