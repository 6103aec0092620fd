"""The message lists of recent request bodies, so a history re-sent is not parsed again.

A client re-sends its whole history on every turn: the messages it sent last time come again,
byte for byte, with a few new ones after them. The scanner (:mod:`tokenlean.proxy._scan`) keeps
each body's list here under the text of its first message (a conversation's opening), and on
the next body with that opening compares each kept message's text with the bytes at the same
place (a ``memcmp``, not a parse): the ones that match are taken as they were, parsed values
included, and only the rest is parsed. The values are shared by the requests that sent the same
text, which is safe because nothing in the proxy mutates a body it reads.

Bounded in lists and in the characters their texts hold (the parsed values take about as much
again); only ever a cache: a list evicted, or a conversation whose messages changed, is parsed.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from typing import Any

__all__ = ["RECENT_MAX_BYTES", "RECENT_MAX_LISTS", "RecentLists"]

Items = list[tuple[Any, str]]  # (value, JSON text) of each message, in order

#: About 200 conversations of 100k-token histories, or a few of 200k tokens and more.
RECENT_MAX_BYTES = 128 * 2**20
RECENT_MAX_LISTS = 256


class RecentLists:
    """Thread-safe LRU of message lists keyed by their first message's text."""

    def __init__(self, max_lists: int = RECENT_MAX_LISTS, max_bytes: int = RECENT_MAX_BYTES):
        self.max_lists = max_lists
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[Items, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """The estimated bytes of the lists kept."""
        return self._bytes

    def get(self, first: str) -> Items:
        """The items kept for a list opened by ``first`` (empty when none)."""
        found = self._items.get(first)  # one atomic step: no lock on the common path
        return [] if found is None else found[0]

    def put(self, items: Items) -> None:
        """Keep ``items`` (a whole list, its first item's text the key)."""
        if not items:
            return
        # The value takes about twice its text (dicts, strings); the text is counted once more.
        charge = sum(sys.getsizeof(text) for _, text in items) * 3
        if charge > self.max_bytes:
            return
        key = items[0][1]
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = (items, charge)
            self._bytes += charge
            while len(self._items) > self.max_lists or self._bytes > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
