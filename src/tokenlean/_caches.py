"""Caches bounded in bytes: a memo keyed by a whole tool output must not hold thousands of them.

``functools.lru_cache`` bounds a cache in entries, and the entries of tokenlean's memos are
texts (tool outputs, commands) and what was computed from them: 4,096 entries of 1 MB outputs
are gigabytes. :func:`byte_bounded` is an LRU memo bounded in entries *and* in the bytes its
keys and values hold (:func:`held_bytes`); an entry larger than the whole bound is computed and
not kept. Only ever a cache: evicting costs time, never changes a result.
"""

from __future__ import annotations

import marshal
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import fields, is_dataclass
from typing import Any, Generic, ParamSpec, Protocol, TypeVar

__all__ = [
    "CACHE_MAX_BYTES",
    "CACHE_MAX_ENTRIES",
    "LISTS_PER_OPENING",
    "BoundedLru",
    "BoundedMemo",
    "Openings",
    "byte_bounded",
    "content_key",
    "held_bytes",
]

#: Each memo's default bound, in bytes of its keys and values (:func:`held_bytes`): the texts of
#: a long conversation's results read again on every call fit, a flood of distinct ones does not.
CACHE_MAX_BYTES = 32 * 2**20
#: Each memo's default bound in entries (what ``lru_cache`` sizes were: small texts stay cheap).
CACHE_MAX_ENTRIES = 4096

#: How many lists of one opening :class:`Openings` keeps: the conversations of a team's agents
#: that open alike (one system prompt, one task run several times) and go on at once. A request
#: is compared with each list of its opening, so this bounds that walk too; the caches keyed by
#: objects file lists under their second item (:func:`~tokenlean._identity.branch`) and walk
#: only the lists that share it.
LISTS_PER_OPENING = 256

#: The ``marshal`` format without references: equal contents give equal bytes, whatever else
#: holds their objects (from version 3 on, an object held elsewhere is written differently).
_MARSHAL_VERSION = 2

P = ParamSpec("P")
R = TypeVar("R")
K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")


def held_bytes(value: object) -> int:
    """What ``value`` takes in memory with everything it holds, through containers and
    dataclasses (``sys.getsizeof`` of each object: a text counts its real width, one to four
    bytes a character). An object held twice counts twice: the bound errs on the safe side.
    Walked with a stack of its own, so a value nested however deep is measured too."""
    size = 0
    stack = [value]
    while stack:
        value = stack.pop()
        size += sys.getsizeof(value)
        # concrete types first (parsed JSON is made of them): the abstract checks cost more
        if value is None or isinstance(value, (str, int, float, bytes)):
            continue
        if isinstance(value, (dict, Mapping)):
            stack += value.keys()
            stack += value.values()
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack += value
        elif is_dataclass(value) and not isinstance(value, type):
            stack += (getattr(value, f.name) for f in fields(value))
    return size


def content_key(value: object) -> bytes | None:
    """Bytes that only an equal value gives (``marshal``'s: values of the exact built-in types,
    nested less than 2,000 deep), to find what was worked out from a value that may have been
    changed in place or rebuilt since; ``None`` for any other value. ``marshal.loads`` of them
    is a private copy of the value."""
    try:
        return marshal.dumps(value, _MARSHAL_VERSION)  # type: ignore[arg-type]  # any value: it checks
    except ValueError:  # an object of another type, or nested too deep
        return None


class BoundedLru(Generic[K, V]):
    """Values by key, least recently used first out, within ``max_entries`` and ``max_bytes``
    (the charge its caller gives each entry); thread-safe. A lookup takes no lock: each
    ``OrderedDict`` step is atomic when hashing the key runs no Python code (texts, bytes,
    numbers and tuples of them), and an entry dropped meanwhile is simply not moved."""

    def __init__(self, *, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """The bytes charged for the entries kept."""
        return self._bytes

    def get(self, key: K) -> V | None:
        """The value kept for ``key``, or None."""
        found = self._items.get(key)
        if found is None:
            return None
        # no lock: a request looks up a thousand messages, and taking one for each cost twice
        # the lookup itself
        try:  # noqa: SIM105 - contextlib.suppress costs 4x this whole hit (~1 us vs 0.26)
            self._items.move_to_end(key)
        except KeyError:  # dropped by a put meanwhile: nothing to move
            pass
        return found[0]

    def put(self, key: K, value: V, charge: int) -> None:
        """Keep ``value`` for ``key``, charged ``charge`` bytes (not kept when over the bound)."""
        if charge > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            self._bytes += charge - (0 if old is None else old[1])
            self._items[key] = (value, charge)
            while len(self._items) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0


class _Store(Protocol[T]):
    """What :class:`Openings` keeps its lists in (a :class:`BoundedLru`, or a ``ByIdentity``
    whose keys are the opening objects themselves)."""

    max_bytes: int

    @property
    def size(self) -> int: ...

    def get(self, key: Any) -> T | None: ...

    def put(self, key: Any, value: T, charge: int) -> None: ...

    def clear(self) -> None: ...


class Openings(Generic[V]):
    """Lists kept by how they open (the caller's key: their first item's text, the content of
    their first two, or the object where they part, :func:`~tokenlean._identity.branch`),
    several under one key: conversations that open alike (one system prompt for a team's
    agents, a task run twice) each find their own, where one list an opening let each put push
    the other out, so every request of both was read in full.

    :meth:`find` gives the kept list that shares the most leading items with the list at hand;
    :meth:`put` keeps a list in place of the one it continues (the same conversation a turn
    later), else beside the others, the most recent first, up to ``per_opening``. Bounded by its
    store: in openings (its entries) and in the bytes of all their lists. ``length`` tells how
    many items a kept list has."""

    def __init__(
        self,
        store: _Store[tuple[tuple[V, int], ...]],
        length: Callable[[V], int],
        per_opening: int = LISTS_PER_OPENING,
    ) -> None:
        self.store = store
        self.length = length
        self.per_opening = per_opening
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """The bytes charged for the lists kept."""
        return self.store.size

    @property
    def max_bytes(self) -> int:
        """The bound on the bytes of all lists kept (the store's)."""
        return self.store.max_bytes

    @max_bytes.setter
    def max_bytes(self, value: int) -> None:
        self.store.max_bytes = value

    def find(self, key: Any, shared: Callable[[V], int]) -> tuple[V | None, int]:
        """The list kept under ``key`` that shares the most leading items with the list at hand
        (``shared`` of it: how many; the most recent of equals), and that count."""
        kept = self.store.get(key)
        if not kept:
            return None, 0
        best, most = kept[0][0], shared(kept[0][0])
        for value, _ in kept[1:]:
            if (count := shared(value)) > most:
                best, most = value, count
        return best, most

    def put(self, key: Any, value: V, charge: int, found: V | None = None, shared: int = 0) -> None:
        """Keep ``value`` under ``key``, charged ``charge`` bytes; in place of ``found`` (what
        :meth:`find` gave for it, sharing ``shared`` items) if it continues that list. The
        oldest lists of the opening go first when it holds more than ``per_opening`` or more
        bytes than its store."""
        replacing = found if found is not None and _continues(shared, self.length(found)) else None
        with self._lock:  # two requests of one opening at once: neither list lost
            kept = self.store.get(key) or ()
            lists = [(value, charge), *(entry for entry in kept if entry[0] is not replacing)]
            del lists[self.per_opening :]
            total = sum(entry[1] for entry in lists)
            while len(lists) > 1 and total > self.store.max_bytes:
                total -= lists.pop()[1]
            self.store.put(key, tuple(lists), total)

    def clear(self) -> None:
        self.store.clear()


def _continues(shared: int, kept: int) -> bool:
    """Whether a list that shares ``shared`` leading items with a kept list of ``kept`` items
    is that list a turn later: all of it, or all but its newest item (a client moves its cache
    breakpoint to the newest message, which changes the one that held it)."""
    return shared >= max(1, kept - 1)


class BoundedMemo(Generic[P, R]):
    """``function`` memoised by its arguments, least recently used first out, within
    ``max_bytes`` and ``max_entries`` (what its keys and values hold); thread-safe (a value may
    be computed twice at once)."""

    def __init__(self, function: Callable[P, R], *, max_bytes: int, max_entries: int) -> None:
        self.function = function
        self._kept: BoundedLru[Hashable, tuple[R]] = BoundedLru(
            max_entries=max_entries, max_bytes=max_bytes
        )
        self.__doc__ = function.__doc__
        self.__wrapped__ = function

    @property
    def max_bytes(self) -> int:
        return self._kept.max_bytes

    @property
    def max_entries(self) -> int:
        return self._kept.max_entries

    @property
    def size(self) -> int:
        """Bytes of the keys and values kept."""
        return self._kept.size

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        key: Hashable = (args, tuple(sorted(kwargs.items()))) if kwargs else args
        found = self._kept.get(key)  # a 1-tuple: a function may return None
        if found is not None:
            return found[0]
        value = self.function(*args, **kwargs)
        self._kept.put(key, (value,), held_bytes(key) + held_bytes(value))
        return value

    def __copy__(self) -> BoundedMemo[P, R]:
        return self  # as lru_cache: one memo, however often what holds it is copied

    def __deepcopy__(self, memo: dict[int, Any]) -> BoundedMemo[P, R]:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled (with the counter that holds it, say), it arrives empty: a lock cannot travel.
        return _fresh, (self.function, self.max_bytes, self.max_entries)

    def cache_clear(self) -> None:
        self._kept.clear()


def _fresh(function: Callable[P, R], max_bytes: int, max_entries: int) -> BoundedMemo[P, R]:
    return BoundedMemo(function, max_bytes=max_bytes, max_entries=max_entries)


def byte_bounded(
    max_bytes: int = CACHE_MAX_BYTES, max_entries: int = CACHE_MAX_ENTRIES
) -> Callable[[Callable[P, R]], BoundedMemo[P, R]]:
    """A decorator like ``functools.lru_cache(maxsize=max_entries)``, also bounded in bytes."""

    def wrap(function: Callable[P, R]) -> BoundedMemo[P, R]:
        return BoundedMemo(function, max_bytes=max_bytes, max_entries=max_entries)

    return wrap
