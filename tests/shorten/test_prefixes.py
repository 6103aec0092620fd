"""Lines asked only about the prefixes of their first character, and line numbers stripped only
where a digit opens the line, give what asking every prefix and matching every line gave."""

from __future__ import annotations

from itertools import repeat

from hypothesis import given
from hypothesis import strategies as st

from tokenlean.shorten._code import (
    _CODE_START,
    _OUTLINE,
    _TRACE_START,
    _strip_number,
    _unnumbered,
)
from tokenlean.shorten._prefixes import Prefixes

_PIECES = [*_OUTLINE, *_CODE_START, *_TRACE_START, " ", "\t", "12", "٣", "\u2192", ":", "x", ""]
_LINES = st.lists(st.lists(st.sampled_from(_PIECES) | st.text(max_size=3)).map("".join))


@given(_LINES, st.sampled_from([_OUTLINE + _CODE_START, _OUTLINE, _TRACE_START, ("ab", "a")]))
def test_prefixes_answer_as_startswith_with_the_tuple(
    lines: list[str], prefixes: tuple[str, ...]
) -> None:
    assert Prefixes(prefixes).starting(lines) == [line.startswith(prefixes) for line in lines]


@given(_LINES)
def test_unnumbered_lines_are_those_the_pattern_strips(lines: list[str]) -> None:
    assert _unnumbered(lines) == list(map(_strip_number, repeat(""), lines, repeat(1)))
