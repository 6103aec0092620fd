"""Traceback heads found among the lines holding "traceback" are those a scan finds, and the
error lines found with those lines given are those found without."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tokenlean.shorten._classify import errors_in, repeated_frames
from tokenlean.shorten._text import Lines

_LINES = [
    "Traceback (most recent call last):",
    "During handling: Traceback (most recent call last):",
    "TRACEBACK (MOST RECENT CALL LAST):",
    '  File "a.py", line 3, in f',
    "    x()",
    "ValueError: bad",
    "traceback",
    "ok",
    "",
]


@given(st.lists(st.sampled_from(_LINES), max_size=40))
def test_heads_among_traceback_lines_are_the_scanned_ones(items: list[str]) -> None:
    lines = Lines("\n".join(items))
    traced = lines.find_all("traceback", lower=True)
    assert repeated_frames(lines, traced) == repeated_frames(lines)
    assert errors_in(lines, traced) == errors_in(lines)
