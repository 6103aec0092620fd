"""Originals of shortened text, kept as content-addressed files the agent can read back.

A proxy has no tool of its own to offer the agent, but coding agents read files: each original is
written once to ``<dir>/<sha256 prefix>.txt`` and the omission markers name that path and the
line range. The name depends only on the text, so any number of processes sharing the directory
write (and name) the same file, and the markers stay byte-identical from request to request.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

#: Hex digits of the sha256 in a file name: 48 bits, so a collision needs millions of originals
#: (each marker spends tokens on the name, so it is no longer).
NAME_DIGITS = 12


def default_originals_dir() -> Path:
    """``$XDG_CACHE_HOME/tokenlean/originals``, else ``~/.cache/tokenlean/originals``."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if Path(base).is_absolute() else Path.home() / ".cache"
    return (root / "tokenlean" / "originals").absolute()


def original_path(directory: Path, text: str) -> Path:
    """Where ``text`` is kept in ``directory`` (a pure function of the text)."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return directory / f"{digest[:NAME_DIGITS]}.txt"


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
