"""The guards that let canonical_text skip a pattern: a pattern they skip cannot match."""

from __future__ import annotations

import re
import sys

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tokenlean.loop_guard._canonical import _VOLATILE, _Probe

_PIECES = [
    "0", "1", "7", "12", "2024", "-", ":", ".", ",", " ", "\t", "\n", "\x1c", "\u00a0", "٣", "T",
    "Z", "UTC", "+", "m", "ms", "u", "us", "µs", "n", "ns", "s", "sec", "seconds", "pid", "PID",
    "pİd", "pıd", "proceſs", "process", "thread", "Thread", "=", "#", "[", "]", "[1]", "\n[",
    "a", "f", "F", "deadbeef", "abc123", "x", "_", "é", "g",
]  # fmt: skip
_texts = st.lists(st.sampled_from(_PIECES), max_size=40).map("".join)


@settings(max_examples=1500)
@given(_texts)
@example("5\x1cms 12:30:45 2024-01-02 pıd 42 ab12cd3 [1]  77")
@example("٣٣:٣٣:٣٣ 2٠24-01-02 1\u00a0ms thread 9")
def test_a_guard_never_skips_a_pattern_that_matches(text: str) -> None:
    for may_match, replace in _VOLATILE:
        if may_match is not None and not may_match(_Probe(text)):
            assert replace(text) == text


def test_the_hex_guard_holds_outside_ascii() -> None:
    """``[0-9a-f]`` under ``re.I`` matches no character outside ASCII, so the hex guard can
    read any text with those characters written "?"."""
    hex_digit = re.compile(r"[0-9a-f]", re.I)
    found = [
        hex(c)
        for c in range(0x80, sys.maxunicode + 1)
        if not 0xD800 <= c <= 0xDFFF and hex_digit.match(chr(c))
    ]
    assert found == []
