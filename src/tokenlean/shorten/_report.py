"""What a shortening did: the new text, its size before and after, and every omission."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Kind", "Omission", "Reason", "ShortenReport"]

#: The content kinds :func:`tokenlean.shorten.shorten` tells apart, and ``"repeat"``: a tool result
#: that first-sight shortening sent as a pointer to an identical earlier one.
Kind = Literal["log", "code", "diff", "json", "text", "page", "listing", "repeat"]
#: Why a stretch was left out.
Reason = Literal[
    "similar", "repeat", "seen", "budget", "long-line", "caret", "items", "chars", "trace"
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Omission:
    """One stretch left out of the text.

    ``first_line``/``last_line`` are 1-based line numbers in the original text (for JSON items and
    characters inside a line they name the line holding them). ``count`` is in ``unit``.
    """

    reason: Reason
    count: int
    first_line: int
    last_line: int
    unit: Literal["lines", "items", "chars"] = "lines"


@dataclass(frozen=True, slots=True)
class ShortenReport:
    """The shortened text and what was done to get it.

    ``tokens_before``/``tokens_after`` are counted with the counter passed to ``shorten``
    (:data:`tokenlean.tokens.DEFAULT_COUNTER` when none was given). When nothing could be
    saved, ``text`` is the input unchanged and ``omissions`` is empty.
    """

    text: str
    kind: Kind
    tokens_before: int
    tokens_after: int
    omissions: tuple[Omission, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.omissions)

    @property
    def tokens_saved(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def lines_omitted(self) -> int:
        return sum(o.count for o in self.omissions if o.unit == "lines")
