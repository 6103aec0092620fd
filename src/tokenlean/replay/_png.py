"""The replay's chart as a PNG: its SVG drawn by CairoSVG (the ``chart`` extra, which needs
the cairo library of the system)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["PNG_EXTRA", "png", "png_problem"]

#: What to install for ``--chart x.png``.
PNG_EXTRA = "pip install 'tokenlean[chart]' (CairoSVG, with the system's cairo library)"


def _cairosvg() -> Any:
    # cairocffi raises OSError, not ImportError, when the system's cairo library is missing
    try:
        return importlib.import_module("cairosvg")
    except (ImportError, OSError) as exc:
        raise ImportError(f"a PNG chart needs CairoSVG: {PNG_EXTRA}") from exc


def png_problem() -> str | None:
    """Why a PNG cannot be drawn here, in one line (None: it can)."""
    try:
        _cairosvg()
    except ImportError as exc:
        return str(exc)
    return None


def png(svg: str) -> bytes:
    """``svg`` drawn as PNG bytes at twice its size (sharp on a high-density screen)."""
    drawn: bytes = _cairosvg().svg2png(bytestring=svg.encode("utf-8"), scale=2)
    return drawn
