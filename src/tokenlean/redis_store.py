"""Originals on a Redis (or Valkey) server: one store for proxies, workers and agents on many
machines, where a folder would need a network file system.

``RedisOriginalStore("redis://HOST:PORT/DB")`` (``rediss://`` for TLS; a server whose
certificate a private CA signed is reached with ``rediss://HOST:PORT/DB?ssl_ca_certs=CA.pem``,
an option the ``redis`` package reads from the URL, which no line shown repeats) follows the one
:class:`~tokenlean.store.OriginalStore` protocol. Originals are content-addressed as in the
folder store (the handle names the text, so every process writes and names the same key), under
a key prefix, and bounded as the folder is: each expires once unused for ``max_age`` seconds (a
TTL that every put and read sets again), and past ``max_bytes`` (a total the store keeps on the
server) the least recently used are deleted first. As with the folder, an original used in the
last :data:`~tokenlean._retention.GRACE` seconds is kept over the cap, up to half the cap again
(past that, a flood of new originals, the least recently used go even inside the grace), and
the proxy puts every original of a history on each request before the body goes upstream:
whatever a live conversation points at stays readable. It puts them with
:meth:`~RedisOriginalStore.put_many`: those this process put in the last minute are skipped,
the others asked about in one round trip, and those the server lacks written in one more. A
skip trusts that nothing deleted them since, which only a flood can: so each process reads the
server's count of sweeps that deleted inside the grace, in the round trip it makes anyway or
at most once every :data:`FLOODS_READ_EVERY` seconds on its own, and puts everything again
once that count moves.

There is no file for a marker to name, so markers name ``read_original`` and a handle
(``retrieval="mcp"``), which ``tokenlean mcp --originals redis://...`` serves from any machine
that reaches the server. The password comes from the URL, else ``$TOKENLEAN_REDIS_PASSWORD``,
else ``$REDISCLI_AUTH``; it never appears in a log line, ``repr`` or error. When the server
cannot be reached, :meth:`~RedisOriginalStore.put` raises
:class:`~tokenlean.store.StoreUnavailable` (the request then goes upstream as it came, with no
marker naming an original that was not kept) and reads answer nothing; the outage is logged
once, and its end too. Needs the ``redis`` extra: ``pip install 'tokenlean[redis]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
import time
from collections.abc import Sequence
from typing import Any

from tokenlean import checks
from tokenlean._put_lately import FLOODS_READ_EVERY, PutLately
from tokenlean._redis_calls import ServerCalls
from tokenlean._redis_url import (
    PASSWORD_ENV,
    SCHEMES,
    check_url,
    is_redis_url,
    redacted,
    redis_module,
)
from tokenlean._retention import (
    GRACE,
    SWEEP_EVERY,
    Pruned,
    check_limits,
    hard_cap,
)
from tokenlean.store import (
    MEMORY_EVICTED_REMEMBERED,
    ORIGINALS_MAX_AGE,
    ORIGINALS_MAX_BYTES,
    Original,
    StoreUnavailable,
    looks_like_handle,
    utf8_size,
)

__all__ = [
    "FLOODS_READ_EVERY",
    "PASSWORD_ENV",
    "PREFIX",
    "SCHEMES",
    "RedisOriginalStore",
    "check_url",
    "is_redis_url",
]

#: Every key the store writes starts with this.
PREFIX = "tokenlean:originals:"
#: How many originals one sweep script looks at, so the server is never blocked for long.
_SWEEP_BATCH = 1000


class RedisOriginalStore:
    """Originals on a Redis server at ``url``; see the module docstring.

    ``max_bytes`` (default 1 GiB) and ``max_age`` (seconds, default 7 days) bound it as they
    bound a folder (:class:`~tokenlean.store.FolderOriginalStore`); ``prefix`` starts every
    key (give each team sharing a server its own). Nothing connects until the first call.
    """

    def __init__(
        self,
        url: str,
        *,
        max_bytes: int = ORIGINALS_MAX_BYTES,
        max_age: float = ORIGINALS_MAX_AGE,
        prefix: str = PREFIX,
    ) -> None:
        checked = check_url(url, "url")
        self.url = redacted(checked)
        self.max_bytes, self.max_age = check_limits(max_bytes, max_age)
        self.prefix = checks.text(prefix, "prefix")
        self._ttl = math.ceil(self.max_age)
        redis_module()  # a missing package is told now, not at the first request
        self._server = ServerCalls(checked, self.url)
        self._swept: float | None = None  # monotonic time of this process's last sweep
        self._lately = PutLately()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RedisOriginalStore({self.url!r}, prefix={self.prefix!r})"

    def key(self, scope: str, handle: str) -> str:
        """The key that holds ``handle`` (the scope, when not ``""``, is part of it)."""
        return f"{self.prefix}o:{_member(scope, handle)}"

    @property
    def reachable(self) -> bool:
        """Whether the last call reached the server (``False`` during an outage)."""
        return self._server.reachable

    def put(self, scope: str, original: Original) -> None:
        """Keep ``original`` (or mark it used when kept); :class:`StoreUnavailable` when the
        server cannot be reached. One this store put less than TOUCH_AFTER seconds ago is not
        sent again: what was used that recently outlives the grace and the TTL alike."""
        self.put_many(scope, [original])

    def put_many(self, scope: str, originals: Sequence[Original]) -> None:
        """:meth:`put` of each of ``originals``, in two round trips at most: one marks those
        the server keeps used, one writes the others (then a sweep, when over the cap).

        A flood (a sweep, of any process, that deleted inside the grace) may have deleted what
        this process skips: it learns of its own sweeps' at once, of others' by reading the
        server's count at most every :data:`FLOODS_READ_EVERY` seconds (in the round trip it
        makes anyway, else on its own), and then puts everything again."""
        wanted: dict[str, Original] = {}
        for original in originals:
            wanted.setdefault(_member(scope, original.handle), original)
        lately = self._lately
        fresh = lately.unsent(wanted)
        read = lately.floods_due()
        if read and not fresh:
            read = False
            with contextlib.suppress(StoreUnavailable):  # logged where it failed; skip as before
                lately.note_floods(self._server.call(lambda c: c.get(self._k("floods"))))
                fresh = lately.unsent(wanted)
        forgot = lately.forgot
        self._write(scope, fresh, read=read)
        if lately.forgot != forgot:  # a flood since: what was skipped above may be gone
            skipped = {m: o for m, o in wanted.items() if m not in fresh}
            self._write(scope, skipped, read=False)

    def _write(self, scope: str, fresh: dict[str, Original], *, read: bool) -> None:
        """Mark ``fresh`` used and write those the server lacks (``read``: with the flood
        count, in the same round trip). They are remembered as put unless the sweep after
        them was a flood, which may have deleted some."""
        if not fresh:
            return
        used = self._k("used")
        touches = [([self.key(scope, o.handle), used], [m, self._ttl]) for m, o in fresh.items()]
        kept = self._server.run_many("touch", touches, read=self._k("floods") if read else None)
        if read:
            self._lately.note_floods(kept.pop(0))
        forgot = self._lately.forgot
        missing = [(m, o) for (m, o), was in zip(fresh.items(), kept, strict=True) if not was]
        if missing:
            more = [used, self._k("sizes"), self._k("bytes"), self._k("evicted")]
            ttl = self._ttl
            puts = [([self.key(scope, o.handle), *more], _put_args(m, o, ttl)) for m, o in missing]
            self._after_put(max(int(total) for total in self._server.run_many("put", puts)))
        if self._lately.forgot == forgot:
            self._lately.remember(fresh)

    def get(self, scope: str, handle: str) -> Original | None:
        """The original (marked used), or ``None``: none kept, or the server unreachable."""
        if not looks_like_handle(handle):
            return None
        keys = [self.key(scope, handle), self._k("used")]
        try:
            found = self._server.run("get", keys, [_member(scope, handle), self._ttl])
        except StoreUnavailable:
            return None
        if not found:
            return None
        data = dict(zip(found[::2], found[1::2], strict=True))  # field, value, ...
        tool, call = data.get(b"tool"), data.get(b"tool_call_id")
        return Original(handle, _text(data[b"text"]), tool and _text(tool), call and _text(call))

    def evicted(self, scope: str, handle: str) -> bool:
        """Whether a sweep (of any process) deleted ``handle`` and it was not put since."""
        if not looks_like_handle(handle):
            return False
        member = _member(scope, handle)
        try:
            score = self._server.call(lambda c: c.zscore(self._k("evicted"), member))
        except StoreUnavailable:
            return False
        return score is not None

    def prune(self, *, dry_run: bool = False) -> Pruned:
        """Sweep now (``dry_run``: only count what would go); what was deleted and kept.
        Raises :class:`StoreUnavailable` when the server cannot be reached."""
        if dry_run:
            return Pruned(*self._sweep_once(dry=True, batch=0))
        files = size = 0
        with self._lock:
            self._swept = time.monotonic()  # the next sweep is due from now, as after a put's
        while True:
            gone, freed, kept, kept_bytes = self._sweep_once(dry=False, batch=_SWEEP_BATCH)
            files, size = files + gone, size + freed
            if gone < _SWEEP_BATCH:
                return Pruned(files, size, kept, kept_bytes)

    async def aput(self, scope: str, original: Original) -> None:
        await asyncio.to_thread(self.put, scope, original)

    async def aget(self, scope: str, handle: str) -> Original | None:
        return await asyncio.to_thread(self.get, scope, handle)

    # -- internals -------------------------------------------------------------------------

    def _k(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def _sweep_once(self, *, dry: bool, batch: int) -> list[int]:
        """One sweep script's deleted count and bytes, kept count and bytes; the server's
        flood count it returns too is taken here."""
        keys = [self._k(n) for n in ("used", "sizes", "bytes", "evicted", "floods")]
        args = [self._k("o:"), self.max_bytes, self.max_age, GRACE, int(dry), batch]
        more = [MEMORY_EVICTED_REMEMBERED, hard_cap(self.max_bytes)]
        *counts, floods = self._server.run("sweep", keys, [*args, *more])
        self._lately.note_floods(floods)
        return [int(n) for n in counts]

    def _after_put(self, total: int) -> None:
        """Sweep when over the cap, and at least every SWEEP_EVERY seconds while writing (so
        the bookkeeping of originals that expired is cleared); a failed sweep costs nothing
        but its log line (the original is kept)."""
        now = time.monotonic()
        with self._lock:
            due = total > self.max_bytes or self._swept is None or now - self._swept >= SWEEP_EVERY
            if due:
                self._swept = now
        if due:
            with contextlib.suppress(StoreUnavailable):  # logged where it failed
                self.prune()


def _member(scope: str, handle: str) -> str:
    return handle if not scope else f"{scope}/{handle}"


def _put_args(member: str, original: Original, ttl: int) -> list[Any]:
    """The PUT script's ARGV: member, ttl, size, then the hash's fields and values."""
    return [member, ttl, utf8_size(original.text), *_fields(original), "ttl", ttl]


def _fields(original: Original) -> list[str]:
    out = ["text", original.text]
    if original.tool is not None:
        out += ["tool", original.tool]
    if original.tool_call_id is not None:
        out += ["tool_call_id", original.tool_call_id]
    return out


def _text(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")
