"""Originals of shortened text, kept as content-addressed files the agent can read back.

A proxy has no tool of its own to offer the agent, but coding agents read files: each original is
written once to ``<dir>/<handle>.txt`` (:func:`tokenlean.store.make_handle` of the text alone) and
the omission markers name that path and the
line range. The name depends only on the text, so any number of processes sharing the directory
write (and name) the same file, and the markers stay byte-identical from request to request.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tokenlean.store import make_handle


def default_originals_dir() -> Path:
    """``$XDG_CACHE_HOME/tokenlean/originals``, else ``~/.cache/tokenlean/originals``."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if Path(base).is_absolute() else Path.home() / ".cache"
    return (root / "tokenlean" / "originals").absolute()


def original_path(directory: Path, text: str) -> Path:
    """Where ``text`` is kept in ``directory`` (a pure function of the text)."""
    return directory / f"{make_handle('o', text)}.txt"


def keep(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` unless it is already there; atomic, private to the user.

    Tool output may hold secrets, so the directory is created ``0700`` and files ``0600``. The
    text is written to a temporary file beside the target and renamed over it, so a reader never
    sees half a file and concurrent writers of the same (identical) content cannot clash.
    """
    if path.exists():
        return
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace", newline="") as out:
            out.write(text)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
