"""The sample trajectories shipped with tokenlean (see ``data/NOTICE.md`` for their origin)."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).parent / "data"


def bundled_paths() -> list[Path]:
    """Paths of the bundled sample trajectories, in a stable order."""
    return sorted(DATA_DIR.glob("*.json"))
