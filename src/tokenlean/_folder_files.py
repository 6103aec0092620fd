"""The files of a folder of originals, one at a time: the folder kept private, an original
marked used, a writer's temporary files named apart, and the log of what sweeps pruned (so a
reader can tell a pruned handle from one never written). The sweeps are
:mod:`tokenlean._retention`'s."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "PRUNED_LOG",
    "TMP_PREFIX",
    "TOUCH_AFTER",
    "freshen",
    "make_private",
    "remember_pruned",
    "secure_folder",
    "was_pruned",
]

#: A used file's mtime is refreshed only once it is this old (seconds).
TOUCH_AFTER = 60.0
#: Handles the sweeps deleted, one a line, so a reader can say "pruned" rather than "unknown".
PRUNED_LOG = ".pruned"
PRUNED_LOG_MAX_BYTES = 2**20  # about 75,000 handles; past it the older half is forgotten
#: How a writer's temporary file starts (a sweep deletes one a process that died left).
TMP_PREFIX = ".tmp-"


def secure_folder(directory: Path) -> None:
    """Make an existing ``directory`` private (``0700``), or refuse one another user owns.

    Tool output may hold secrets, and a folder someone else owns could be read by them, or fed
    with files an agent would take for originals. A folder that does not exist yet is created
    ``0700`` by the first write.
    """
    try:
        info = directory.stat()
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISDIR(info.st_mode):  # every write will fail, and be forwarded as it came
        return
    getuid = getattr(os, "getuid", None)  # not on Windows, where modes mean little
    if getuid is None:
        return
    if info.st_uid != getuid():
        raise ValueError(
            f"the originals folder {directory} belongs to another user (uid {info.st_uid}); "
            "tool output kept there may hold secrets, so use a folder of your own "
            "(--originals DIR, or originals_dir=...)"
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        directory.chmod(0o700)


def freshen(path: str | Path, now: float | None = None) -> bool:
    """Whether ``path`` is a file (not a link to one); if so, mark it used (mtime) when stale
    and make it ``0600``. A link placed in the folder counts as absent, so a put writes over it
    and nothing touches the file it points at. (A request puts every original its history
    names again, so a path may come as a string: no ``Path`` made for each.)"""
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    if not stat.S_ISREG(info.st_mode):
        return False
    make_private(path, info.st_mode)
    if (now if now is not None else time.time()) - info.st_mtime > TOUCH_AFTER:
        try:
            os.utime(path)
        except FileNotFoundError:  # a sweep took it meanwhile: the caller writes it again
            return False
        except OSError:  # not ours to touch (a foreign file); it is still there
            pass
    return True


def make_private(path: str | Path, mode: int) -> None:
    if stat.S_IMODE(mode) & 0o077:
        with contextlib.suppress(OSError):  # gone, or not ours: nothing to do here
            Path(path).chmod(0o600)


def remember_pruned(directory: Path, handles: Iterable[str]) -> None:
    """Append ``handles`` to the pruned log, keeping the log under its bound."""
    text = "".join(f"{h}\n" for h in handles)
    if not text:
        return
    path = directory / PRUNED_LOG
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, text.encode())  # one O_APPEND write: concurrent sweeps do not interleave
        size = os.fstat(fd).st_size
    finally:
        os.close(fd)
    if size > PRUNED_LOG_MAX_BYTES:
        _trim(path)


def _trim(path: Path) -> None:
    """Keep the newer half of the pruned log (a handle appended meanwhile may be lost: the
    log only picks the words of an answer)."""
    try:
        lines = path.read_text(encoding="ascii", errors="replace").splitlines(keepends=True)
    except FileNotFoundError:
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TMP_PREFIX, suffix=".log")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.writelines(lines[len(lines) // 2 :])
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def was_pruned(directory: Path, handle: str) -> bool:
    """Whether a sweep of ``directory`` deleted ``handle`` (as far as the log remembers)."""
    try:
        text = (directory / PRUNED_LOG).read_text(encoding="ascii", errors="replace")
    except (FileNotFoundError, NotADirectoryError):
        return False
    return handle in text.splitlines()
