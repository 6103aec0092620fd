"""Originals as files an agent can open (:class:`FolderOriginalStore`), bounded in size and in
age (:mod:`tokenlean._retention`)."""

from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path

from tokenlean import checks
from tokenlean._folder_files import TMP_PREFIX, freshen, secure_folder, was_pruned
from tokenlean._retention import (
    ORIGINALS_MAX_AGE,
    ORIGINALS_MAX_BYTES,
    Pruned,
    Retention,
    check_limits,
)
from tokenlean._store_protocol import HANDLE_PATTERN, Original, looks_like_handle, utf8_size

__all__ = ["FolderOriginalStore", "default_originals_dir"]

#: Opening a file refuses a link (where the platform can: not Windows, which checks apart),
#: and never waits for a writer (a fifo planted in the folder).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_OPEN_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)


class FolderOriginalStore:
    """Originals as files in ``directory``, ``<handle>.txt`` each, private to the user.

    For agents that read files (behind the proxy or an SDK wrapper): the handle is the file's
    name, so a marker names a path the agent's own file tools open. The scope is not part of the
    name: a handle made from the text alone (:class:`~tokenlean.readback.FileReadBack`) lets any
    number of processes and conversations share one folder and write (and name) the same file.

    The folder is bounded: originals unused for ``max_age`` seconds (default
    :data:`ORIGINALS_MAX_AGE`, 7 days) are deleted, then the least recently used until it holds
    at most ``max_bytes`` (default :data:`ORIGINALS_MAX_BYTES`, 1 GiB), by sweeps amortised over
    the writes, each on a thread of its own so that no put waits for one (:meth:`wait_for_sweep`
    waits); putting or reading an original marks it used. :meth:`prune` sweeps now. An
    existing folder is made ``0700`` (and its files ``0600`` as they are swept or used); one
    another user owns is refused with ``ValueError``.
    """

    def __init__(
        self,
        directory: Path,
        *,
        max_bytes: int = ORIGINALS_MAX_BYTES,
        max_age: float = ORIGINALS_MAX_AGE,
    ) -> None:
        checks.instance(directory, "directory", (str, Path), "a path")
        self.directory = Path(directory)
        self._folder = os.fspath(self.directory)
        self.max_bytes, self.max_age = check_limits(max_bytes, max_age)
        secure_folder(self.directory)
        self._retention = Retention(
            self.directory, max_bytes=self.max_bytes, max_age=self.max_age, is_original=_is_file
        )

    def path(self, handle: str) -> Path:
        return self.directory / f"{handle}.txt"

    def put(self, scope: str, original: Original) -> None:
        """Write the text unless it is already there (then mark it used); atomic, private.

        Tool output may hold secrets, so the directory is created ``0700`` and files ``0600``.
        The text is written to a temporary file beside the target and renamed over it, so a
        reader never sees half a file and concurrent writers of the same (identical) content
        cannot clash.
        """
        # self.path's, as a str: a request puts every original its history names again
        name = f"{self._folder}{os.sep}{original.handle}.txt"
        if freshen(name):
            self._retention.after_put(0)
            return
        path = Path(name)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TMP_PREFIX, suffix=".txt")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="replace", newline="") as out:
                out.write(original.text)
            Path(tmp).replace(path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._retention.after_put(utf8_size(original.text))

    def get(self, scope: str, handle: str) -> Original | None:
        if not looks_like_handle(handle):
            return None
        path = self.path(handle)
        text = _read_file(path)
        if text is None:
            return None
        freshen(path)  # read: used
        return Original(handle, text)

    def evicted(self, scope: str, handle: str) -> bool:
        """Whether ``handle``'s file was deleted by a sweep (of any process) and not since
        written again."""
        return (
            looks_like_handle(handle)
            and not self.path(handle).exists()
            and was_pruned(self.directory, handle)
        )

    def prune(self, *, dry_run: bool = False) -> Pruned:
        """Sweep now (``dry_run``: only count what would go); what was deleted and kept."""
        return self._retention.sweep(dry_run=dry_run)

    def wait_for_sweep(self, timeout: float | None = None) -> bool:
        """Wait until the sweep a put started, if any, has finished (puts sweep on a thread of
        their own, now and then); False if ``timeout`` seconds passed first."""
        return self._retention.wait(timeout)

    async def aput(self, scope: str, original: Original) -> None:
        self.put(scope, original)

    async def aget(self, scope: str, handle: str) -> Original | None:
        return self.get(scope, handle)


def _read_file(path: Path) -> str | None:
    """The text of the regular file at ``path``; None when there is none, or when ``path`` is a
    link or anything but a file: an agent must not read through the folder what lies outside
    it (a link planted under an original's name)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:  # absent, a link (ELOOP), a folder...
        return None
    with os.fdopen(fd, encoding="utf-8", errors="replace") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or (not _NOFOLLOW and path.is_symlink()):
            return None
        return file.read()


#: Whether a name is an original's file (the only files a sweep deletes): a handle and ".txt",
#: asked at C speed of every name a sweep lists.
_is_file = re.compile(rf"{HANDLE_PATTERN}\.txt").fullmatch


def default_originals_dir() -> Path:
    """``$XDG_CACHE_HOME/tokenlean/originals``, else ``~/.cache/tokenlean/originals``."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if Path(base).is_absolute() else Path.home() / ".cache"
    return (root / "tokenlean" / "originals").absolute()
