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
from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Generic, TypeVar

from tokenlean._caches import BoundedLru

__all__ = ["ByIdentity", "branch", "leading", "same_objects"]

V = TypeVar("V")
T = TypeVar("T")
_HEAD = 8  # flags looked at before the rest (see :func:`leading`)


class ByIdentity(Generic[V]):
    """A thread-safe LRU of values keyed by the identity of the object they were derived from."""

    def __init__(self, *, max_entries: int, max_bytes: int) -> None:
        self._kept: BoundedLru[int, tuple[object, V]] = BoundedLru(
            max_entries=max_entries, max_bytes=max_bytes
        )

    @property
    def max_entries(self) -> int:
        return self._kept.max_entries

    @max_entries.setter
    def max_entries(self, value: int) -> None:
        self._kept.max_entries = value

    @property
    def max_bytes(self) -> int:
        return self._kept.max_bytes

    @max_bytes.setter
    def max_bytes(self, value: int) -> None:
        self._kept.max_bytes = value

    @property
    def size(self) -> int:
        """The bytes charged for the entries kept."""
        return self._kept.size

    def get(self, obj: object) -> V | None:
        """The value kept for ``obj`` itself (not for an equal object), or None."""
        found = self._kept.get(id(obj))
        return None if found is None or found[0] is not obj else found[1]

    def put(self, obj: object, value: V, charge: int) -> None:
        """Keep ``value`` for ``obj``, charged ``charge`` bytes (not kept when over the bound)."""
        self._kept.put(id(obj), (obj, value), charge)

    def clear(self) -> None:
        self._kept.clear()


def same_objects(kept: Iterable[object], given: Iterable[object]) -> int:
    """How many leading items of ``given`` are the very objects ``kept`` holds at the same
    places (a history re-sent: its messages are the ones of the last time), found at C speed."""
    return leading(map(operator.is_, kept, given))


def leading(flags: Iterable[bool]) -> int:
    """How many of ``flags`` are true before the first false one (given as a ``map`` of a
    C-level comparison, no Python step per item). The first few are looked at on their own: a
    list that differs from a kept one most often does so at once (another conversation of the
    same opening), and then the rest is never compared."""
    flags = iter(flags)
    head = list(islice(flags, _HEAD))
    if False in head:
        return head.index(False)
    found = list(flags)
    try:
        return len(head) + found.index(False)
    except ValueError:
        return len(head) + len(found)


def branch(items: Sequence[T]) -> T:
    """The object a kept list of ``items`` is filed under: its second item, else its only one.

    Conversations that open alike (agents of one system prompt, given a task each) most often
    part at their second item. Filed under it, a re-sent history finds its own list at once,
    where filed under the first one it was compared with every list of that opening, a cost
    that grew with the conversations. Those that share their second item too (a task run
    twice) are filed together, and compared with each other's lists as before."""
    return items[1] if len(items) > 1 else items[0]
