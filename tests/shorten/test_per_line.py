"""The line engine's C-level passes give what their one-step-per-line forms gave, and a log whose
every line is an error (pytest's ``E`` lines) costs no Python call per line.

Each reference below is the earlier form; random inputs (hypothesis) are built from few
characters, so runs, repeats and protected lines are common.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Collection
from types import FrameType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenlean import shorten
from tokenlean.shorten._classify import (
    _FRAME,
    KEY_LAST_FRAMES,
    _frame_within,
    _Frames,
    _frames_below,
)
from tokenlean.shorten._detect import is_heading, is_label
from tokenlean.shorten._docs import _BACK_MATTER, _back_matter, _headings
from tokenlean.shorten._lines import _Fill
from tokenlean.shorten._records import is_record, may_be_records
from tokenlean.shorten._selection import MUST, REST, Selection, around, distances
from tokenlean.shorten._similar import Run, similar_runs
from tokenlean.shorten._summaries import is_summary, summaries_among
from tokenlean.shorten._text import Lines

_LINES = st.lists(st.sampled_from(["a", "a 1", "a 2", "b", "", "E   x", "1 passed"]), max_size=60)


def _python_calls(text: str) -> Counter[str]:
    """How often each Python function runs while ``text`` is shortened."""
    calls: Counter[str] = Counter()

    def count(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            calls[frame.f_code.co_name] += 1

    sys.setprofile(count)
    try:
        shorten(text)
    finally:
        sys.setprofile(None)
    return calls


def test_a_log_of_pytest_e_lines_costs_no_python_call_per_line() -> None:
    # every line is an error and a summary candidate, every line has a neighbour's shape: the
    # per-line work must be C-level passes (before, each line cost eight Python calls); one
    # line outside ASCII must not make every line go through the regexes
    def log(n: int) -> str:
        return "E   naïve\n" + "\n".join(f"E       assert {i} == {i + 1}" for i in range(n))

    few, more = _python_calls(log(2000)), _python_calls(log(4000))
    grown = {name: k for name, k in (more - few).items() if k >= 100}
    assert grown == {}


def _similar_runs_per_line(
    items: list[str], shaped: list[str], protected: Collection[int], min_run: int
) -> list[Run]:
    runs: list[Run] = []
    start, n = 0, len(items)
    while start < n:
        end = start
        if start in protected:
            while end + 1 < n and items[end + 1] == items[start]:
                end += 1
        else:
            while end + 1 < n and end + 1 not in protected and shaped[end + 1] == shaped[start]:
                end += 1
        if end - start + 1 >= min_run and items[start].strip():
            runs.append(Run(start, end, tuple(range(start + 1, end))))
        start = end + 1
    return runs


@settings(max_examples=300, deadline=None)
@given(_LINES, st.sets(st.integers(0, 60)), st.integers(3, 5))
def test_similar_runs_match_the_per_line_form(
    items: list[str], protected: set[int], min_run: int
) -> None:
    shaped = [line.strip().strip("0123456789") for line in items]
    expected = _similar_runs_per_line(items, shaped, protected, min_run)
    assert similar_runs(items, shaped, protected, min_run) == expected


def _find_all_per_hit(lines: Lines, needle: str) -> list[int]:
    out: list[int] = []
    start = lines.text.find(needle)
    while start >= 0:
        index = lines.index_at(start)
        out.append(index)
        start = lines.text.find(needle, lines.end_of(index) + 1)
    return out


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab\nE ", max_size=800), st.sampled_from(["a", "ab", "aa", "\nE ", "\na"]))
def test_find_all_in_bulk_matches_one_hit_at_a_time(text: str, needle: str) -> None:
    lines = Lines(text)
    assert lines.find_all(needle) == _find_all_per_hit(lines, needle)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="1 \t|,aE-+.\u2003\u0663", max_size=12), max_size=20))
def test_every_record_may_be_one(items: list[str]) -> None:
    maybe = may_be_records(items)
    assert all(found for line, found in zip(items, maybe, strict=True) if is_record(line))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["3 passed", "OK", "=== a ===", "E  1 x", "1 tests", "\u0663 passed", "é"]),
        max_size=40,
    )
)
def test_narrowed_summaries_are_the_summaries(items: list[str]) -> None:
    candidates = set(range(len(items)))
    assert summaries_among(items, candidates) == {i for i in candidates if is_summary(items[i])}


@settings(max_examples=300, deadline=None)
@given(st.sets(st.integers(-3, 40)), st.integers(0, 3), st.integers(0, 40))
def test_context_and_distances_match_the_per_anchor_forms(
    anchors: set[int], width: int, n: int
) -> None:
    near = set()
    for i in anchors:
        near.update(range(max(0, i - width), min(n, i + width + 1)))
    assert around(anchors, width, n) == near
    points = sorted(a for a in anchors if 0 <= a < n)
    expected = [min((abs(i - p) for p in points), default=n) for i in range(n)]
    assert distances(anchors, n) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0, 10), min_size=1, max_size=40), st.data())
def test_keeping_must_lines_at_once_is_adding_them_one_by_one(
    costs: list[float], data: st.DataObject
) -> None:
    n = len(costs)
    musts = sorted(data.draw(st.sets(st.integers(0, n - 1))))
    tiers = [MUST if i in musts else REST for i in range(n)]
    selection = Selection(tiers, [0] * n, {}, {})
    at_once, one_by_one = _Fill(selection, costs, 5.0, 1.5), _Fill(selection, costs, 5.0, 1.5)
    at_once.keep_all(musts)
    for i in musts:
        one_by_one.add(i)
    assert (at_once.keep, at_once.spent, at_once.gaps) == (
        one_by_one.keep,
        one_by_one.spent,
        one_by_one.gaps,
    )


def _frames_below_matching_each_time(items: list[str], index: int) -> int:
    def within(i: int) -> bool:
        return any(0 <= j < len(items) and _FRAME.match(items[j], 0, 2000) for j in (i + 1, i + 2))

    count, j = 0, index
    while count < KEY_LAST_FRAMES and within(j):
        j = j + 1 if _FRAME.match(items[j + 1], 0, 2000) else j + 2
        count += 1
    return count


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(['  File "a.py", line 3', "    x = 1", "", "E"]), max_size=30))
def test_frames_matched_once_are_the_frames_matched_each_time(items: list[str]) -> None:
    frames = _Frames(items)
    for i in range(len(items)):
        above = any(0 <= j < len(items) and _FRAME.match(items[j], 0, 2000) for j in (i - 1, i - 2))
        assert _frame_within(frames, i, -1) == above
        assert _frames_below(frames, i) == _frames_below_matching_each_time(items, i)


_DOC_LINES = [
    "# Notes",
    "## a",
    "#x",
    "Title",
    "===",
    "--",
    "  - x",
    "Section:",
    "    body",
    "",
    "a",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_DOC_LINES), max_size=30))
def test_headings_and_back_matter_match_the_per_line_forms(items: list[str]) -> None:
    below = [*items[1:], ""]
    headings = {
        i
        for i in range(len(items))
        if is_heading(items[i], below[i]) or is_label(items[i], below[i])
    }
    assert _headings(items) == headings
    back, inside = set(), False
    for i, line in enumerate(items):
        if i in headings:
            inside = line.strip().strip("#").strip().lower() in _BACK_MATTER
        elif inside:
            back.add(i)
    assert _back_matter(items, headings) == back
