"""The framework-free core of tool-input shortening: policy, handles, markers, the cut itself."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenlean.readback import ToolReadBack
from tokenlean.shorten._inputs import (
    InputShorteningSettings,
    argument_handle,
    marker,
    shorten_arguments,
)
from tokenlean.tokens import EstimateCounter

POLICY = InputShorteningSettings(min_tokens=50, head_lines=4, tail_lines=2)
SCRIPT = "\n".join(
    [
        "import sys",
        "from astropy.modeling import models as m",
        *[
            f"print('checking separability of compound model number {i}', m.Linear1D({i}))"
            for i in range(40)
        ],
        "sys.exit(0)",
    ]
)
MARKER = re.compile(
    r"^\[\.\.\. (\d+) lines of this input omitted after the call ran; (.*) shows them \.\.\.\]$"
)


def test_short_arguments_are_returned_as_they_are() -> None:
    args = {"command": "ls -la", "path": "a\nb\nc", "timeout": 30}
    out, cuts = shorten_arguments("c1", args, policy=InputShorteningSettings())
    assert out == args and cuts == []


def test_a_long_multiline_string_keeps_exactly_head_marker_and_tail() -> None:
    args = {"command": SCRIPT}
    out, cuts = shorten_arguments(
        "c1", args, policy=POLICY, read_back=ToolReadBack("read_original")
    )
    lines, kept = SCRIPT.split("\n"), out["command"].split("\n")
    assert len(kept) == 4 + 1 + 2
    assert kept[:4] == lines[:4] and kept[-2:] == lines[-2:]
    found = MARKER.match(kept[4])
    assert found is not None, kept[4]
    assert int(found.group(1)) == len(lines) - 6
    handle = argument_handle("c1", "command", SCRIPT)
    assert found.group(2) == f'read_original("{handle}")'
    [cut] = cuts
    assert (cut.key, cut.handle, cut.original) == ("command", handle, SCRIPT)
    assert cut.tokens_after < cut.tokens_before


def test_without_a_tool_the_marker_still_names_the_handle() -> None:
    out, [cut] = shorten_arguments("c1", {"command": SCRIPT}, policy=POLICY)
    assert f'kept as "{cut.handle}"' in out["command"]
    assert "read_original" not in out["command"]


def test_non_string_values_are_untouched_even_when_they_hold_long_text() -> None:
    nested = {"files": [SCRIPT, SCRIPT], "meta": {"body": SCRIPT}, "n": 3, "flag": None}
    out, cuts = shorten_arguments("c1", nested, policy=POLICY)
    assert cuts == [] and out == nested
    assert out["files"] is nested["files"] and out["meta"] is nested["meta"]


def test_only_the_long_arguments_of_a_call_are_cut() -> None:
    args = {"command": SCRIPT, "cwd": "/repo", "stdin": SCRIPT.replace("print", "log")}
    out, cuts = shorten_arguments("c1", args, policy=POLICY)
    assert [c.key for c in cuts] == ["command", "stdin"]
    assert out["cwd"] == "/repo"
    assert len({c.handle for c in cuts}) == 2  # one original per argument


def test_the_input_is_never_mutated() -> None:
    args: dict[str, Any] = {"command": SCRIPT, "env": {"A": "1"}, "argv": ["x"]}
    before = copy.deepcopy(args)
    out, _ = shorten_arguments("c1", args, policy=POLICY)
    assert args == before and out is not args


def test_few_lines_are_never_cut_however_many_tokens_they_hold() -> None:
    one_line = "x = " + " + ".join(str(i) for i in range(2000))
    seven = "\n".join([one_line] * 8)  # head 4 + tail 2 + 2: not worth a marker
    out, cuts = shorten_arguments("c1", {"a": one_line, "b": seven}, policy=POLICY)
    assert cuts == [] and out == {"a": one_line, "b": seven}


def test_min_tokens_is_a_strict_threshold() -> None:
    text = "\n".join(f"line {i}" for i in range(30))
    tokens = EstimateCounter().count(text)
    at = InputShorteningSettings(min_tokens=tokens, head_lines=2, tail_lines=1)
    below = InputShorteningSettings(min_tokens=tokens - 1, head_lines=2, tail_lines=1)
    assert shorten_arguments("c", {"t": text}, policy=at)[1] == []
    assert len(shorten_arguments("c", {"t": text}, policy=below)[1]) == 1


def test_a_cut_that_would_not_save_tokens_is_skipped() -> None:
    text = "\n".join("" for _ in range(12))  # eleven empty lines: the marker costs more
    out, cuts = shorten_arguments(
        "c", {"t": text}, policy=InputShorteningSettings(min_tokens=0, head_lines=1, tail_lines=1)
    )
    assert cuts == [] and out["t"] == text


def test_zero_head_or_tail_lines_keep_only_the_other_end() -> None:
    lines = SCRIPT.split("\n")
    no_tail, _ = shorten_arguments(
        "c", {"t": SCRIPT}, policy=InputShorteningSettings(min_tokens=0, head_lines=3, tail_lines=0)
    )
    no_head, _ = shorten_arguments(
        "c", {"t": SCRIPT}, policy=InputShorteningSettings(min_tokens=0, head_lines=0, tail_lines=3)
    )
    assert no_tail["t"].split("\n")[:3] == lines[:3] and MARKER.match(no_tail["t"].split("\n")[3])
    assert no_head["t"].split("\n")[1:] == lines[-3:] and MARKER.match(no_head["t"].split("\n")[0])


def test_the_handle_is_deterministic_and_depends_on_call_key_and_text() -> None:
    handle = argument_handle("c1", "command", SCRIPT)
    assert handle == argument_handle("c1", "command", SCRIPT)
    assert re.fullmatch(r"i\d{12}", handle)
    others = {
        argument_handle("c2", "command", SCRIPT),
        argument_handle("c1", "script", SCRIPT),
        argument_handle("c1", "command", SCRIPT + " "),
    }
    assert handle not in others and len(others) == 3
    assert argument_handle("c1", "k", "bad \ud800 unicode").startswith("i")


def test_marker_names_the_tool_and_the_count() -> None:
    assert marker(7, "iabc123", "read_original") == (
        "[... 7 lines of this input omitted after the call ran;"
        ' read_original("iabc123") shows them ...]'
    )
    assert 'kept as "iabc123"' in marker(7, "iabc123", None)


def test_cutting_is_deterministic() -> None:
    first = shorten_arguments("c1", {"command": SCRIPT}, policy=POLICY, read_back=ToolReadBack("r"))
    assert first == shorten_arguments(
        "c1", {"command": SCRIPT}, policy=POLICY, read_back=ToolReadBack("r")
    )


def test_exact_counter_sees_fewer_tokens_too(o200k: Any) -> None:
    out, [cut] = shorten_arguments("c1", {"command": SCRIPT}, policy=POLICY, counter=o200k)
    assert cut.tokens_before == o200k.count(SCRIPT)
    assert cut.tokens_after == o200k.count(out["command"]) < cut.tokens_before


@pytest.mark.parametrize(
    "kwargs",
    [
        {"min_tokens": -1},
        {"head_lines": -1},
        {"tail_lines": -2},
        {"head_lines": 1.5},
        {"tail_lines": "3"},
        {"min_tokens": True},
        {"min_tokens": None},
    ],
)
def test_bad_policy_raises_value_error_naming_the_field(kwargs: dict[str, Any]) -> None:
    [name] = kwargs
    with pytest.raises(ValueError, match=name):
        InputShorteningSettings(**kwargs)


# -- properties ------------------------------------------------------------------------------

LINE = st.text(st.characters(blacklist_characters="\n", blacklist_categories=["Cs"]), max_size=40)
TEXT = st.lists(LINE, min_size=0, max_size=60).map("\n".join)
VALUE = st.one_of(
    TEXT,
    st.integers(),
    st.none(),
    st.booleans(),
    st.lists(TEXT, max_size=3),
    st.dictionaries(st.text(max_size=5), TEXT, max_size=3),
)
ARGS = st.dictionaries(st.text(max_size=10), VALUE, max_size=4)
POLICIES = st.builds(
    InputShorteningSettings,
    min_tokens=st.integers(0, 80),
    head_lines=st.integers(0, 8),
    tail_lines=st.integers(0, 8),
)
TOOL = st.sampled_from([None, "read_original", "fetch"])
COUNTER = EstimateCounter()


@settings(max_examples=300, deadline=None)
@given(call_id=st.text(max_size=8), args=ARGS, policy=POLICIES, tool=TOOL)
def test_property_never_longer_and_deterministic(
    call_id: str, args: dict[str, Any], policy: InputShorteningSettings, tool: str | None
) -> None:
    before = copy.deepcopy(args)
    out, cuts = shorten_arguments(call_id, args, policy=policy, read_back=ToolReadBack(tool))
    assert args == before  # never mutated
    assert (out, cuts) == shorten_arguments(
        call_id, args, policy=policy, read_back=ToolReadBack(tool)
    )
    assert out.keys() == args.keys()
    for key, value in args.items():
        if isinstance(value, str):
            assert COUNTER.count(out[key]) <= COUNTER.count(value)
        else:
            assert out[key] is value  # non-strings untouched
    assert sorted(c.key for c in cuts) == sorted(k for k in args if out[k] != args[k])
    for cut in cuts:
        assert cut.original == args[cut.key]
        assert cut.tokens_after == COUNTER.count(out[cut.key]) < cut.tokens_before
        assert cut.tokens_before > policy.min_tokens


@settings(max_examples=300, deadline=None)
@given(text=TEXT, policy=POLICIES, tool=TOOL)
def test_property_head_and_tail_lines_are_kept_verbatim(
    text: str, policy: InputShorteningSettings, tool: str | None
) -> None:
    out, cuts = shorten_arguments("c", {"k": text}, policy=policy, read_back=ToolReadBack(tool))
    if not cuts:
        assert out["k"] == text
        return
    lines, kept = text.split("\n"), out["k"].split("\n")
    head, tail = policy.head_lines, policy.tail_lines
    assert len(lines) > head + tail + 2
    assert kept[:head] == lines[:head]
    assert kept[head + 1 :] == (lines[-tail:] if tail else [])
    found = MARKER.match(kept[head])
    assert found is not None and int(found.group(1)) == len(lines) - head - tail
    assert cuts[0].handle in kept[head] and (tool is None or f'{tool}("' in kept[head])
