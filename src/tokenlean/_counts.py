"""A count with its noun, as every report of tokenlean prints one ("1 session", "2 strategies")."""

from __future__ import annotations

__all__ = ["count"]


def count(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless one ("1 session", "2 strategies")."""
    if n == 1:
        return f"{n:,} {noun}"
    plural = f"{noun[:-1]}ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else f"{noun}s"
    return f"{n:,} {plural}"
