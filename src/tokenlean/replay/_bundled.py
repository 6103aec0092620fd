"""The sample trajectories shipped with tokenlean (see ``data/NOTICE.md`` for their origin).

They sit in one folder per source, named as in the shared data, so a replay of the samples
reports per source the same way a replay of the shared data does.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA_DIR", "bundled_paths"]

DATA_DIR = Path(__file__).parent / "data"


def bundled_paths() -> list[Path]:
    """Paths of the bundled sample trajectories, in a stable order."""
    return sorted(DATA_DIR.glob("*/*.json"))
