"""Invariants of ``shorten`` on generated input (hypothesis)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenlean import shorten
from tokenlean.shorten import Retrieval, error_lines
from tokenlean.shorten._text import estimate_tokens

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_WORDS = st.sampled_from(
    [
        "ok",
        "step",
        "value",
        "compute_total",
        "a/b/c.py",
        "42",
        "1234",
        "Loading",
        "done",
        "x",
        "self.items",
        "  ",
        "==",
        "->",
        "{",
        "}",
        "(",
        ")",
        ":",
        "#",
        "é",
        "日本",
    ]
)
_ERRORS = st.sampled_from(
    [
        "ValueError: bad input 7",
        "ERROR: test_parse (pkg.tests.ParseTests)",
        "FAILED tests/test_x.py::test_y - AssertionError",
        "src/app.py:12:5: error: Incompatible types",
        "E       assert 3 == 4",
        "fatal: not a git repository",
        "Traceback (most recent call last):",
        "panic: runtime error: index out of range",
    ]
)
_LINE = st.lists(_WORDS, min_size=0, max_size=14).map(" ".join)
_LOG = st.lists(st.one_of(_LINE, _LINE, _LINE, _ERRORS), min_size=60, max_size=400).map("\n".join)
_TEXT = st.one_of(_LOG, st.text(max_size=3000))
_QUERY = st.one_of(st.none(), st.sampled_from(["compute_total", "grep -n value a/b/c.py", "é"]))


@SETTINGS
@given(text=_TEXT, max_tokens=st.integers(1, 400), query=_QUERY)
def test_output_is_never_longer_than_input(text: str, max_tokens: int, query: str | None) -> None:
    report = shorten(text, max_tokens=max_tokens, query=query, retrieval=Retrieval("o1", "read"))
    assert len(report.text) <= len(text)
    assert estimate_tokens(report.text) <= estimate_tokens(text)
    assert report.tokens_after <= report.tokens_before
    assert report.changed == (report.text != text)


@SETTINGS
@given(text=_TEXT, max_tokens=st.integers(1, 400), query=_QUERY)
def test_output_is_deterministic(text: str, max_tokens: int, query: str | None) -> None:
    first = shorten(text, max_tokens=max_tokens, query=query)
    again = shorten(str(text), max_tokens=max_tokens, query=query)
    assert first == again


_JSON: Any = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=600),
    lambda inner: (
        st.lists(inner, max_size=40) | st.dictionaries(st.text(max_size=8), inner, max_size=8)
    ),
    max_leaves=400,
)


@SETTINGS
@given(value=_JSON, indent=st.sampled_from([None, 2, 4]), max_tokens=st.integers(1, 300))
def test_valid_json_stays_valid_json(value: Any, indent: int | None, max_tokens: int) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    report = shorten(text, max_tokens=max_tokens, retrieval=Retrieval("o1", "read"))
    json.loads(report.text)
    if isinstance(value, (dict, list)) and report.changed:
        assert report.kind == "json"
        assert type(json.loads(report.text)) is type(value)


@SETTINGS
@given(text=_LOG, query=_QUERY)
def test_every_error_line_of_a_log_survives_the_default_budget(
    text: str, query: str | None
) -> None:
    report = shorten(text, query=query)
    kept = set(report.text.split("\n"))
    items = text.split("\n")
    assert all(items[i] in kept for i in error_lines(text))


_SHORT_ARRAY: Any = st.lists(
    st.dictionaries(st.sampled_from(["id", "price", "status"]), st.integers(0, 10**9), max_size=3),
    max_size=6,
)


@SETTINGS
@given(
    arrays=st.lists(_SHORT_ARRAY, min_size=1, max_size=4),
    filler=st.integers(0, 6000),
    long_list=st.integers(0, 300),
)
def test_arrays_of_at_most_json_max_items_are_never_crushed(
    arrays: list[Any], filler: int, long_list: int
) -> None:
    record = {
        "notes": "lorem ipsum " * filler,  # pushes the record over budget, into harsher tries
        "events": [{"n": i, "status": "done"} for i in range(long_list)],
        **{f"a{k}": array for k, array in enumerate(arrays)},
    }
    report = shorten(json.dumps(record), retrieval=Retrieval("o1", "read"))
    data = json.loads(report.text)
    for k, array in enumerate(arrays):
        assert data[f"a{k}"] == array
    markers = [x for x in data["events"] if isinstance(x, str)]
    kept = [x for x in data["events"] if isinstance(x, dict)]
    assert len(kept) + sum(int(m.split()[1]) for m in markers) == long_list


_CODE_LINE = st.sampled_from(
    [
        "def handle(self, request):",
        "    value = compute_total(items, 42)",
        "    return value",
        "",
        "class Order(Base):",
        "    # keep the total in cents",
        "        if x > 3:",
        "            raise ValueError('bad')",
    ]
)


@SETTINGS
@given(body=st.lists(_CODE_LINE, min_size=3, max_size=120), start=st.integers(1, 5000))
def test_numbered_file_views_under_the_view_size_pass_whole(body: list[str], start: int) -> None:
    view = "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(body, start))  # cat -n
    assert estimate_tokens(view) <= 3000
    assert shorten(view, query="cat -n app.py").text == view


@SETTINGS
@given(
    copies=st.integers(2, 40),
    frames=st.lists(st.sampled_from(["a.py", "b.py", "c/d.py"]), min_size=1, max_size=5),
    between=st.sampled_from(["", "retrying", "worker restarted"]),
)
def test_a_repeated_traceback_is_sent_once(copies: int, frames: list[str], between: str) -> None:
    trace = ["Traceback (most recent call last):"]
    for k, name in enumerate(frames):
        trace += [f'  File "/app/{name}", line {10 + k}, in f{k}', f"    step_{k}()"]
    trace.append("KeyError: 'token'")
    blocks = [([between] if between else []) + trace for _ in range(copies)]
    text = "\n".join(line for block in blocks for line in block)
    report = shorten(text, max_tokens=10_000)
    assert report.text.count(trace[1]) == 1
    assert "copies of lines" in report.text or "a copy of lines" in report.text
