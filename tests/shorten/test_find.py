"""Needles ending in blanks are found where ``str.find`` finds them, and so are their lines."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tokenlean.shorten._text import Lines, _find, lower_in_place

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


# Characters outside ASCII (the Kelvin sign lower-cases to "k"; "İ" to two characters, one "i"),
# a lone surrogate, and the copy's stand-in "?" itself.
_MIXED = st.lists(
    st.sampled_from(["\n", "K", "k", "\u212a", "\u0130", "i", "?", "é", "\ud800", "rror", " "]),
    max_size=200,
).map("".join)
_ASCII_AND_OTHER_NEEDLES = st.sampled_from(["k", "kk", "i", "?", "k?", "rror", "é", "\u212a", " k"])


@given(_MIXED, _ASCII_AND_OTHER_NEEDLES, st.booleans())
def test_lines_are_found_the_same_in_a_text_not_all_ascii(
    hay: str, needle: str, lower: bool
) -> None:
    """Scans of a text with characters outside ASCII run over an ASCII copy of it: the lines
    found are those the text itself (lower-cased as ``lower_in_place`` does) holds the needle on."""
    searched = lower_in_place(hay) if lower else hay
    expected = sorted({searched.count("\n", 0, at) for at in _starts(searched, needle)})
    assert Lines(hay).find_all(needle, lower=lower) == expected


def test_only_the_kelvin_sign_lowers_to_one_ascii_character() -> None:
    """What the ASCII copies assume of this Python's Unicode tables: past ASCII, of the
    characters ``lower_in_place`` lower-cases (those that stay one character), only the Kelvin
    sign becomes one in ASCII."""
    others = map(chr, range(0x80, 0x110000))
    assert [c for c in others if len(c.lower()) == 1 and c.lower().isascii()] == ["\u212a"]
