"""Needles ending in blanks are found where ``str.find`` finds them, and so are their lines."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tokenlean.shorten._text import Lines, _find

_HAY = st.lists(st.sampled_from(["\n", "E", " ", "  ", "@@", "x", "é"]), max_size=300).map("".join)
_NEEDLES = st.sampled_from(["\nE  ", "\n@@ ", "E ", "  ", " ", "\nE", "x"])


@given(_HAY, _NEEDLES, st.integers(0, 20))
def test_find_finds_what_str_find_finds(hay: str, needle: str, start: int) -> None:
    assert _find(hay, needle, start) == hay.find(needle, start)


@given(_HAY, _NEEDLES)
def test_lines_holding_a_needle_are_those_that_hold_it(hay: str, needle: str) -> None:
    lines = Lines(hay)
    expected = sorted({hay.count("\n", 0, at) for at in _starts(hay, needle)})
    assert lines.find_all(needle) == expected


def _starts(hay: str, needle: str) -> list[int]:
    """Where ``needle`` starts, each occurrence after the line of the one before."""
    out, at = [], hay.find(needle)
    while at >= 0:
        out.append(at)
        end = hay.find("\n", at)
        at = -1 if end < 0 else hay.find(needle, end + 1)
    return out
