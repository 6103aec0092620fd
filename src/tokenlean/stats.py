"""The one shape of a middleware's stats: a frozen dataclass snapshot, kept by a :class:`Tally`.

Every middleware exposes ``stats``: a frozen dataclass of counters over every run it served
(all default to 0), read as a consistent snapshot. Behind it, a :class:`Tally` adds to those
counters from many threads at once; counters that are not integers (a per-pattern mapping, the
latest events) are passed to :meth:`Tally.snapshot` by the middleware that keeps them.
"""

from __future__ import annotations

import threading
from dataclasses import fields, is_dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Tally"]

S = TypeVar("S")


class Tally(Generic[S]):
    """Running integer counters behind the stats dataclass ``shape``."""

    def __init__(self, shape: type[S]) -> None:
        if not is_dataclass(shape):
            raise TypeError(f"shape must be a dataclass, got {shape!r}")
        self._shape = shape
        self._names = frozenset(f.name for f in fields(shape) if f.type in (int, "int"))
        self._values = dict.fromkeys(self._names, 0)
        self._lock = threading.Lock()

    def add(self, **deltas: int) -> None:
        """Add to several counters atomically (a name the shape has no counter for raises)."""
        unknown = set(deltas) - self._names
        if unknown:
            raise AttributeError(f"{self._shape.__name__} has no counter {sorted(unknown)[0]!r}")
        with self._lock:
            for name, delta in deltas.items():
                self._values[name] += int(delta)

    def snapshot(self, **extra: Any) -> S:
        """The counters now, as one ``shape`` instance (``extra`` fills its other fields)."""
        with self._lock:
            values = dict(self._values)
        return self._shape(**values, **extra)

    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {"shape": self._shape, "values": dict(self._values)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["shape"])  # type: ignore[misc]  # rebuilds the lock
        self._values.update(state["values"])
