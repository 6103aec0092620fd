"""The message lists of recent request bodies, so a history re-sent is not parsed again.

A client re-sends its whole history on every turn: the messages it sent last time come again,
byte for byte, with a few new ones after them. The scanner (:mod:`tokenlean.proxy._scan`) keeps
each body's list here under the text of its first message (a conversation's opening), and on
the next body with that opening compares the kept list's whole text, separators included,
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
from dataclasses import dataclass
from typing import Any

__all__ = ["RECENT_MAX_BYTES", "RECENT_MAX_LISTS", "KeptList", "RecentLists"]

Items = list[tuple[Any, str]]  # (value, JSON text) of each message, in order
Span = tuple[int, int]

#: About 200 conversations of 100k-token histories, or a few of 200k tokens and more.
RECENT_MAX_BYTES = 128 * 2**20
RECENT_MAX_LISTS = 256
#: An item's own objects beyond its characters: a text's header, a span (a tuple of two
#: integers) and the two list slots that hold them.
_ITEM_BYTES = sys.getsizeof("") + sys.getsizeof((0, 0)) + 2 * sys.getsizeof(2**20) + 16


@dataclass(frozen=True, slots=True)
class KeptList:
    """A list's items, its text from its first item's start to its last item's end as the
    client sent it (separators included), and where each item lay in the body it came from."""

    items: Items
    text: str
    spans: list[Span]

    @classmethod
    def of(cls, items: Items, source: str, spans: list[Span]) -> KeptList:
        """The list whose items lie at ``spans`` of ``source`` (one span per item)."""
        return cls(items, source[spans[0][0] : spans[-1][1]] if spans else "", spans)

    def at(self, offset: int) -> list[Span]:
        """The items' spans in a text that holds :attr:`text` at ``offset`` (most often where
        the body before held it: the same spans)."""
        shift = offset - self.spans[0][0] if self.spans else 0
        return self.spans if not shift else [(a + shift, b + shift) for a, b in self.spans]


class RecentLists:
    """Thread-safe LRU of message lists keyed by their first message's text."""

    def __init__(self, max_lists: int = RECENT_MAX_LISTS, max_bytes: int = RECENT_MAX_BYTES):
        self.max_lists = max_lists
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[KeptList, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """The estimated bytes of the lists kept."""
        return self._bytes

    def get(self, first: str) -> KeptList | None:
        """The list kept for a list opened by ``first``, if any."""
        found = self._items.get(first)  # one atomic step: no lock on the common path
        return None if found is None else found[0]

    def put(self, kept: KeptList) -> None:
        """Keep ``kept`` (a whole list, its first item's text the key)."""
        if not kept.items:
            return
        # The values take about twice their texts (dicts, strings), the texts once more, and
        # the list's whole text once again; each item's text is an object, each span a tuple
        # of two integers. Charged from the whole text: no step per item.
        charge = 4 * sys.getsizeof(kept.text) + _ITEM_BYTES * len(kept.items)
        if charge > self.max_bytes:
            return
        key = kept.items[0][1]
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = (kept, charge)
            self._bytes += charge
            while len(self._items) > self.max_lists or self._bytes > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
