"""What one process put in a shared store lately, and when that can no longer be trusted.

A proxy puts every original of a history on each request; a store on a server skips those it
put in the last :data:`~tokenlean._folder_files.TOUCH_AFTER` seconds, which saves a round trip
each. A skip trusts that nothing deleted them since. Only a flood can (a sweep past the hard
cap deletes even what was used within the grace), so the server counts the sweeps that did,
and :class:`PutLately` forgets everything once that count moves.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import TypeVar

from tokenlean._folder_files import TOUCH_AFTER

__all__ = ["FLOODS_READ_EVERY", "PutLately"]

#: A process that sent nothing else reads the server's flood count at most this often
#: (seconds): how long an original a flood deleted may stay missing while skipped.
FLOODS_READ_EVERY = 1.0
#: Members remembered at most (the oldest are forgotten first).
_MOST = 100_000

V = TypeVar("V")


class PutLately:
    """Members put in the last TOUCH_AFTER seconds, and the server's flood count as last
    read; safe to share between threads."""

    def __init__(self) -> None:
        self._when: OrderedDict[str, float] = OrderedDict()
        self._floods: int | None = None
        self._read: float | None = None  # monotonic; None: never read
        self._lock = threading.Lock()
        #: How many times a flood made this process forget what it put.
        self.forgot = 0

    def unsent(self, wanted: Mapping[str, V]) -> dict[str, V]:
        """Those of ``wanted`` not put in the last TOUCH_AFTER seconds."""
        since = time.monotonic() - TOUCH_AFTER
        with self._lock:
            when = self._when
            return {m: v for m, v in wanted.items() if not (m in when and when[m] > since)}

    def remember(self, members: Iterable[str]) -> None:
        now = time.monotonic()
        with self._lock:
            for member in members:
                self._when[member] = now
                self._when.move_to_end(member)
            while len(self._when) > _MOST:
                self._when.popitem(last=False)

    def forget(self) -> None:
        """Forget every member, as TOUCH_AFTER seconds do."""
        with self._lock:
            self._when.clear()

    def floods_due(self) -> bool:
        """Whether the flood count was last read FLOODS_READ_EVERY seconds ago or more."""
        read = self._read
        return read is None or time.monotonic() - read >= FLOODS_READ_EVERY

    def note_floods(self, value: bytes | int | None) -> None:
        """Take the server's flood count: when it moved since the last read, everything is
        forgotten (a sweep may have deleted it inside the grace)."""
        count = int(value or 0)
        with self._lock:
            if self._floods is not None and count != self._floods:
                self._when.clear()
                self.forgot += 1
            self._floods, self._read = count, time.monotonic()
