"""How a folder of originals stays bounded and private: its limits, its sweeps, what was pruned.

The proxy writes the originals of every request's history, so without limits the folder only
grows. A sweep deletes what was not used for ``max_age`` seconds, then the least recently used
files until the folder holds at most ``max_bytes``. "Used" is the file's mtime: a store refreshes
it whenever an original is put again or read (at most once every
:data:`~tokenlean._folder_files.TOUCH_AFTER` seconds per file, so a history of hundreds of
originals does not cost hundreds of syscalls per request). Each file's own steps (private modes,
marking it used, the log of what was pruned) are :mod:`tokenlean._folder_files`'s.

Why a marker still resolves for everything a live conversation can point at: the proxy puts every
original of a history on each request, before the body goes upstream, so an original a sweep
deleted is written again before any marker the model sees names it; and a sweep keeps a file
used in the last :data:`GRACE` seconds, which covers the time between a request and the agent
opening the file its answer names. So the cap may be exceeded by what was used in the last
minutes, never by what lies idle, and by at most :data:`GRACE_MAX_SHARE` of it: a flood of new
originals is cut too, the least recently used first.

Several processes (``--workers N``, or proxies sharing one folder) sweep the same folder without
coordinating: every step tolerates a file another process deleted first, and a file is deleted
only if its mtime is still the one the sweep saw (used since, it stays).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tokenlean._folder_files import TMP_PREFIX, make_private, remember_pruned
from tokenlean.checks import integer, number

__all__ = [
    "GRACE",
    "GRACE_MAX_SHARE",
    "ORIGINALS_MAX_AGE",
    "ORIGINALS_MAX_BYTES",
    "Pruned",
    "Retention",
    "check_limits",
    "hard_cap",
]

log = logging.getLogger("tokenlean.store")

#: The folder's size cap in bytes: 1 GiB is thousands of long tool outputs (a 24 MB request
#: history writes about that much once), yet small beside a disk.
ORIGINALS_MAX_BYTES = 2**30
#: Originals unused this long (seconds) are deleted: 7 days outlasts a paused conversation
#: (a week-end), and a conversation resumed later re-writes what its history points at.
ORIGINALS_MAX_AGE = 7 * 24 * 3600.0
#: A file used this recently (seconds) is kept over the cap: a marker sent upstream may name it.
GRACE = 600.0
#: ... but only up to this share of the cap: past it, the least recently used go even inside
#: the grace, so a flood of new bodies cannot fill the disk (200 distinct 1 MB bodies in a
#: minute left 200 MB under a 10 MiB cap). The newest, which live requests name, go last.
GRACE_MAX_SHARE = 0.5
#: Without reaching the byte trigger, a store that writes sweeps at least this often (seconds),
#: so the age limit applies to a folder that grows slowly.
SWEEP_EVERY = 3600.0
#: A writer's temporary file older than this (seconds) was left by a process that died.
STRAY_AFTER = 600.0


def check_limits(max_bytes: object, max_age: object, *, prefix: str = "") -> tuple[int, float]:
    """The limits if valid; ``ValueError`` naming ``prefix + "max_bytes"`` (or ``max_age``)."""
    size = integer(max_bytes, f"{prefix}max_bytes", at_least=1)
    age = number(max_age, f"{prefix}max_age", at_least=GRACE)  # below, the grace would win
    return size, age


def hard_cap(max_bytes: int) -> int:
    """The most a store holds even when all of it was used within the grace."""
    return max_bytes + int(max_bytes * GRACE_MAX_SHARE)


@dataclass(frozen=True, slots=True)
class Pruned:
    """What a sweep deleted (or would delete, dry) and what it kept, in files and bytes."""

    files: int
    bytes: int
    kept_files: int
    kept_bytes: int


#: An original as a sweep sees it: last used (mtime), file name, size in bytes. A tuple, so
#: they sort by use, the name breaking ties (every process agrees on the order), at C speed.
_Entry = tuple[float, str, int]


class Retention:
    """The limits of one folder and when to sweep it (one per store, shared by its threads).

    A store calls :meth:`after_put` after every put with the bytes it wrote; the first call
    sweeps (a folder left by earlier runs), then every ``max_bytes // 16`` bytes written, and at
    least every :data:`SWEEP_EVERY` seconds while writing. So the folder exceeds the cap by at
    most a sixteenth per process between sweeps, and a sweep's cost (a listing of the folder)
    is paid once per that many bytes, not per request.

    A sweep runs on a thread of its own, so the put that made it due returns at once: a listing
    and a ``stat`` of each original cost about 2 microseconds of CPU a file (20 ms for the 9,000
    files of half a GiB, ``python -m benchmarks.proxy_start``), and the proxy puts on its way
    upstream. The thread is not a daemon: a process that exits finishes its sweep first, so a
    folder that short-lived processes write to is still swept.
    """

    def __init__(
        self,
        directory: Path,
        *,
        max_bytes: int,
        max_age: float,
        is_original: Callable[[str], object],
    ) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.max_age = max_age
        self._is_original = is_original
        self._every = max(1, max_bytes // 16)
        self._written = 0
        self._last: float | None = None  # monotonic time of the last sweep; None: none yet
        self._sweeping = False
        self._idle = threading.Event()  # set while no sweep that a put started is running
        self._idle.set()
        self._lock = threading.Lock()

    def after_put(self, written: int) -> None:
        """Count ``written`` bytes and, when a sweep is due, start it on a thread of its own."""
        with self._lock:
            self._written += written
            now = time.monotonic()
            if self._sweeping or not self._due(now):  # a sweeping thread sweeps again if due
                return
            self._sweeping, self._written, self._last = True, 0, now
            self._idle.clear()
        sweeper = threading.Thread(target=self._sweep_while_due, name="tokenlean-originals-sweep")
        try:
            sweeper.start()
        except RuntimeError:  # no thread to be had (the interpreter is exiting): sweep here
            self._sweep_while_due()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no sweep that a put started is running; False if ``timeout`` passed."""
        return self._idle.wait(timeout)

    def _due(self, now: float) -> bool:
        return (
            self._last is None
            or self._written >= self._every
            or (self._written > 0 and now - self._last >= SWEEP_EVERY)
        )

    def _sweep_while_due(self) -> None:
        """Sweep, and again while what was written meanwhile makes another sweep due (a burst
        of puts during a sweep is swept right after it)."""
        done = False
        try:
            while not done:
                self._sweep_logged()
                with self._lock:
                    now = time.monotonic()
                    done = not self._due(now)
                    if done:
                        self._sweeping = False
                        self._idle.set()
                    else:
                        self._written, self._last = 0, now
        finally:
            if not done:  # left by an exception that is not an Exception
                self._sweeping = False
                self._idle.set()

    def _sweep_logged(self) -> None:
        """:meth:`sweep`, a failure logged, never raised: it must not cost a request."""
        try:
            self.sweep()
        except OSError as exc:
            log.warning("tokenlean: could not prune the originals in %s: %r", self.directory, exc)
        except Exception:  # a bug: logged with its traceback; the next sweep tries again
            log.exception("tokenlean: the sweep of the originals in %s failed", self.directory)

    def sweep(self, *, dry_run: bool = False) -> Pruned:
        """Delete stray temporary files, originals unused for ``max_age``, then the least
        recently used until the folder holds at most ``max_bytes`` (``dry_run``: count only)."""
        now = time.time()
        entries = self._scan(now, dry_run)
        doomed = [e for e in entries if now - e[0] > self.max_age]
        live = sorted(e for e in entries if now - e[0] <= self.max_age)  # least recently used first
        total = sum(e[2] for e in live)
        hard = hard_cap(self.max_bytes)
        for entry in live:
            if total <= self.max_bytes or (now - entry[0] < GRACE and total <= hard):
                break
            doomed.append(entry)
            total -= entry[2]
        removed = doomed if dry_run else [e for e in doomed if self._delete(e)]
        if not dry_run:
            remember_pruned(self.directory, (e[1].removesuffix(".txt") for e in removed))
        gone = sum(e[2] for e in removed)
        kept = sum(e[2] for e in entries) - gone
        return Pruned(len(removed), gone, len(entries) - len(removed), kept)

    def _scan(self, now: float, dry_run: bool) -> list[_Entry]:
        """The folder's originals (made ``0600`` unless dry); stray temporary files deleted.
        Names are asked first, so only originals and temporary files cost a ``stat``: a sweep
        lists every file while requests share the interpreter with it."""
        try:
            listing = os.scandir(self.directory)
        except FileNotFoundError:
            return []
        entries: list[_Entry] = []
        is_original, regular = self._is_original, stat.S_ISREG
        with listing:
            for item in listing:
                name = item.name
                original = is_original(name)
                if not original and not name.startswith(TMP_PREFIX):
                    continue
                try:
                    info = item.stat(follow_symlinks=False)
                except FileNotFoundError:  # another process deleted it since the listing
                    continue
                if not regular(info.st_mode):
                    continue
                if not original:  # a writer's temporary file
                    if not dry_run and now - info.st_mtime > STRAY_AFTER:
                        Path(item.path).unlink(missing_ok=True)
                    continue
                if not dry_run and info.st_mode & 0o077:
                    make_private(item.path, info.st_mode)
                entries.append((info.st_mtime, name, info.st_size))
        return entries

    def _delete(self, entry: _Entry) -> bool:
        """Delete ``entry`` unless it was used since the scan or is gone already."""
        path = self.directory / entry[1]
        try:
            if path.stat().st_mtime != entry[0]:
                return False
            path.unlink()
        except FileNotFoundError:
            return False
        return True
