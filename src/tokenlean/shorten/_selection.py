"""What the selectors of each kind of text hand the line engine (:mod:`._lines`): a tier and a
rank for every line, the lines forced out and why, and the lines tied together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tokenlean.shorten._report import Reason

__all__ = ["EDGE", "MUST", "NEAR", "PROSE", "REST", "Selection"]

#: Tiers, kept in this order: ``MUST`` lines always, the others while the budget lasts.
MUST, NEAR, EDGE, REST, PROSE = 0, 1, 2, 3, 4


@dataclass(frozen=True, slots=True)
class Selection:
    """What to keep: tier and rank per line, lines forced out, and tied line pairs.

    ``repeats`` maps lines forced out as ``"trace"`` to the first and last line (0-based) of
    the traceback lines they repeat. A ``whole`` selection keeps every line not forced out,
    long lines included.
    """

    tiers: Sequence[int]
    ranks: Sequence[int]
    forced: Mapping[int, Reason]
    ties: Mapping[int, int]
    repeats: Mapping[int, tuple[int, int]] = field(default_factory=dict)
    whole: bool = False
