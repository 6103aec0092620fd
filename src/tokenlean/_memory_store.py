"""Originals in this process's memory (:class:`InMemoryOriginalStore`), bounded in bytes."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from tokenlean import checks
from tokenlean._store_protocol import Original, utf8_size

__all__ = [
    "MEMORY_EVICTED_REMEMBERED",
    "MEMORY_MAX_BYTES",
    "MEMORY_MAX_BYTES_PER_THREAD",
    "InMemoryOriginalStore",
]

#: The in-memory store's bounds, in UTF-8 bytes of original text: per conversation thread (so
#: one busy thread never pushes out another's originals) and over all threads (the memory cap).
MEMORY_MAX_BYTES_PER_THREAD = 16 * 2**20
MEMORY_MAX_BYTES = 128 * 2**20
#: How many evicted handles the in-memory store remembers, to answer "evicted" rather than
#: "no such handle" (about 100 bytes each).
MEMORY_EVICTED_REMEMBERED = 100_000


@dataclass(slots=True)
class _Thread:
    """One scope's originals, oldest first, with their sizes."""

    items: OrderedDict[str, tuple[Original, int]]
    size: int = 0


class InMemoryOriginalStore:
    """Originals in this process's memory, bounded in UTF-8 bytes of original text.

    A thread's oldest originals are dropped once the thread holds more than
    ``max_bytes_per_thread``, and an original larger than that is not kept at all; past
    ``max_bytes`` over all threads, the oldest originals of the least recently used thread go
    first. So one busy thread can never push out another's originals (it holds at most its own
    cap), and memory stays bounded. Dropped handles are remembered (up to
    :data:`MEMORY_EVICTED_REMEMBERED`) so that :meth:`evicted` can tell them from wrong ones.
    Nothing here survives the process: give the agent a LangGraph store for that.
    """

    def __init__(
        self,
        *,
        max_bytes_per_thread: int = MEMORY_MAX_BYTES_PER_THREAD,
        max_bytes: int = MEMORY_MAX_BYTES,
    ) -> None:
        checks.integer(max_bytes_per_thread, "max_bytes_per_thread", at_least=1)
        checks.integer(max_bytes, "max_bytes", at_least=1)
        if max_bytes_per_thread > max_bytes:
            raise ValueError(
                f"max_bytes_per_thread ({max_bytes_per_thread}) must not exceed max_bytes "
                f"({max_bytes})"
            )
        self.max_bytes_per_thread = max_bytes_per_thread
        self.max_bytes = max_bytes
        self._threads: OrderedDict[str, _Thread] = OrderedDict()  # least recently used first
        self._size = 0
        self._count = 0
        self._evicted: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, scope: str, original: Original) -> None:
        size = utf8_size(original.text)
        with self._lock:
            key = (scope, original.handle)
            self._evicted.pop(key, None)
            thread = self._threads.get(scope)
            if thread is None:
                thread = self._threads[scope] = _Thread(OrderedDict())
            self._threads.move_to_end(scope)
            old = thread.items.pop(original.handle, None)
            if old is not None:
                self._drop_size(thread, old[1])
            if size > self.max_bytes_per_thread:  # would push out all the thread has: not kept
                self._remember_evicted(key)
                if not thread.items:
                    del self._threads[scope]
                return
            thread.items[original.handle] = (original, size)
            thread.size += size
            self._size += size
            self._count += 1
            while thread.size > self.max_bytes_per_thread:
                self._evict_oldest(scope, thread)
            # Past the total, the least recently used threads give way (never this one: it holds
            # at most max_bytes_per_thread <= max_bytes on its own).
            while self._size > self.max_bytes:
                self._evict_oldest(*next(iter(self._threads.items())))

    def get(self, scope: str, handle: str) -> Original | None:
        with self._lock:
            thread = self._threads.get(scope)
            entry = thread.items.get(handle) if thread is not None else None
            if entry is None:
                return None
            self._threads.move_to_end(scope)
            return entry[0]

    def evicted(self, scope: str, handle: str) -> bool:
        """Whether ``handle`` was kept in ``scope`` and dropped since to bound the store."""
        with self._lock:
            return (scope, handle) in self._evicted

    async def aput(self, scope: str, original: Original) -> None:
        self.put(scope, original)

    async def aget(self, scope: str, handle: str) -> Original | None:
        return self.get(scope, handle)

    @property
    def size_bytes(self) -> int:
        """UTF-8 bytes of original text held now, over all threads."""
        return self._size

    def thread_bytes(self, scope: str) -> int:
        """UTF-8 bytes of original text held now for ``scope``."""
        with self._lock:
            thread = self._threads.get(scope)
            return thread.size if thread is not None else 0

    def __len__(self) -> int:
        return self._count

    # -- internals (called with the lock held) -------------------------------------------

    def _drop_size(self, thread: _Thread, size: int) -> None:
        thread.size -= size
        self._size -= size
        self._count -= 1

    def _evict_oldest(self, scope: str, thread: _Thread) -> None:
        handle, (_, size) = thread.items.popitem(last=False)
        self._drop_size(thread, size)
        if not thread.items:
            del self._threads[scope]
        self._remember_evicted((scope, handle))

    def _remember_evicted(self, key: tuple[str, str]) -> None:
        self._evicted[key] = None
        if len(self._evicted) > MEMORY_EVICTED_REMEMBERED:
            self._evicted.popitem(last=False)
