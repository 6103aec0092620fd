"""Values worked out from objects their holder never mutates, found again by the object itself.

The proxy reads each request body into values that later requests share: a history re-sent
with a few new messages comes back as the very same message objects
(:mod:`tokenlean.proxy._recent`). What is derived from one of them (its neutral messages, a
history's digests) is then the same too, and is looked up by the object's identity instead of
being worked out again from its content. A kept entry holds its object, so its ``id`` cannot be
reused by another object while the entry lives. Only for objects nobody mutates: a caller whose
objects may change (an SDK user's message list) must not use it.

Bounded in entries and in the bytes its caller charges each entry; least recently used first out.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Generic, TypeVar

__all__ = ["ByIdentity", "leading", "same_objects"]

V = TypeVar("V")


class ByIdentity(Generic[V]):
    """A thread-safe LRU of values keyed by the identity of the object they were derived from."""

    def __init__(self, *, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._items: OrderedDict[int, tuple[object, V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """The bytes charged for the entries kept."""
        return self._bytes

    def get(self, obj: object) -> V | None:
        """The value kept for ``obj`` itself (not for an equal object), or None."""
        key = id(obj)
        found = self._items.get(key)  # one atomic step: no lock to miss
        if found is None or found[0] is not obj:
            return None
        # Atomic too (an int key runs no Python code), so no lock: a request looks up a
        # thousand messages, and taking one for each cost twice the lookup itself.
        try:  # noqa: SIM105  # suppress() costs as much as the lock did (0.18 vs 0.49 us)
            self._items.move_to_end(key)
        except KeyError:  # dropped by a put meanwhile: nothing to move
            pass
        return found[1]

    def put(self, obj: object, value: V, charge: int) -> None:
        """Keep ``value`` for ``obj``, charged ``charge`` bytes (not kept when over the bound)."""
        if charge > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(id(obj), None)
            if old is not None:
                self._bytes -= old[2]
            self._items[id(obj)] = (obj, value, charge)
            self._bytes += charge
            while len(self._items) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, _, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0


def same_objects(kept: Iterable[object], given: Iterable[object]) -> int:
    """How many leading items of ``given`` are the very objects ``kept`` holds at the same
    places (a history re-sent: its messages are the ones of the last time), found at C speed."""
    return leading(map(operator.is_, kept, given))


def leading(flags: Iterable[bool]) -> int:
    """How many of ``flags`` are true before the first false one (given as a ``map`` of a
    C-level comparison, no Python step per item)."""
    found = list(flags)
    try:
        return found.index(False)
    except ValueError:
        return len(found)
