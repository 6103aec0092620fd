"""Invariants of ``shorten`` on generated input (hypothesis)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenlean import shorten
from tokenlean.shorten import Retrieval, error_lines
from tokenlean.shorten.text import estimate_tokens

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
