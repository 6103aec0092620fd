"""OpenCode's session exports (``opencode export``), read as OpenCode sends the conversation to the
model: the native exports of ``../shared/data/native/opencode`` against their raw parts and
against the converted ``opencode_1_14`` runs of the same sessions, each rule of the reading on a
small export, and exports of any shape read without raising."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.data import NATIVE, TRAJECTORIES, shared_params
from tokenlean.cli import main
from tokenlean.replay._formats import (
    Trajectory,
    TrajectoryFormatError,
    load_trajectories,
    load_trajectory,
    message_sequence_problem,
    session_name,
)
from tokenlean.replay._native import MISSING_RESULT, read_native
from tokenlean.replay._opencode import COMPACTION_PROMPT, INTERRUPTED

EXPORTS = sorted((NATIVE / "opencode").glob("*.json"))
CONVERTED = TRAJECTORIES / "opencode_1_14"


def _parts(path: Path, role: str, kind: str) -> list[dict[str, Any]]:
    """The parts of a kind in the messages of a role, straight from the export."""
    export = json.loads(path.read_text(encoding="utf-8"))
    return [
        part
        for message in export["messages"]
        if message["info"]["role"] == role
        for part in message["parts"]
        if part["type"] == kind
    ]


@pytest.mark.parametrize("path", shared_params(EXPORTS), ids=lambda p: p.name[:30])
def test_an_export_reads_to_a_valid_trajectory(path: Path) -> None:
    """Every tool part is a call of its step's turn, answered by its state (a failed call by
    its error), each call once; reasoning and OpenCode's own parts are counted, not read."""
    (trajectory,) = load_trajectories(path)
    tools = _parts(path, "assistant", "tool")
    messages = trajectory.messages
    assert trajectory.meta["native_format"] == "opencode"
    assert message_sequence_problem(messages) is None
    calls = [c.id for m in messages for c in m.tool_calls]
    assert calls == [t["callID"] for t in tools]
    assert len(set(calls)) == len(calls)
    results = {m.tool_call_id: m for m in messages if m.role == "tool"}
    assert [m.text for m in results.values()].count(MISSING_RESULT) == 0
    for tool in tools:
        state, result = tool["state"], results[tool["callID"]]
        failed = state["status"] == "error"
        assert result.text == (state["error"] if failed else state["output"])
        assert result.status == ("error" if failed else None)
    users = [m.text for m in messages if m.role == "user"]
    assert users == [p["text"] for p in _parts(path, "user", "text")]
    skipped = trajectory.meta["skipped"]
    assert skipped["assistant_part:reasoning"] == len(_parts(path, "assistant", "reasoning"))
    assert trajectory.meta["repaired"] == {}
    assert trajectory.meta["session_id"] == json.loads(path.read_text())["info"]["id"]


@pytest.mark.parametrize("path", shared_params(EXPORTS), ids=lambda p: p.name[:30])
def test_an_export_reads_as_its_converted_run(path: Path) -> None:
    """Where the converted run of the same session holds a call, the native reading holds the
    same call (name, arguments) and the same result."""
    native = load_trajectory(path)
    runs = [load_trajectory(run) for run in sorted(CONVERTED.glob("*.json"))]
    (converted,) = [r for r in runs if r.meta.get("session_id") == native.meta["session_id"]]
    ours, theirs = _calls(native), _calls(converted)
    common = sorted(set(ours) & set(theirs))
    assert len(common) >= 10
    assert [c for c in common if ours[c] != theirs[c]] == []
    # the converted run is cut at a size: its calls are the first of the session's
    assert list(ours)[: len(theirs)] == list(theirs)
    if native.meta.get("parent_session_id"):  # a sub-agent's session
        assert converted.meta["is_subagent_session"] is True


def _calls(trajectory: Trajectory) -> dict[str, tuple[Any, ...]]:
    results = {m.tool_call_id: m for m in trajectory.messages if m.role == "tool"}
    return {
        c.id: (c.name, dict(c.args), results[c.id].text, results[c.id].status)
        for m in trajectory.messages
        for c in m.tool_calls
    }


# -- the rules, each on a small export ---------------------------------------------------------


def _export(*messages: dict[str, Any], **info: Any) -> dict[str, Any]:
    return {"info": {"id": "ses_1", "version": "1.14.30", **info}, "messages": list(messages)}


def _user(message_id: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"info": {"id": message_id, "role": "user"}, "parts": list(parts)}


def _assistant(message_id: str, *parts: dict[str, Any], **info: Any) -> dict[str, Any]:
    head = {"id": message_id, "role": "assistant", "providerID": "openai", "modelID": "gpt-5"}
    return {"info": head | info, "parts": [{"type": "step-start"}, *parts]}


def _text(text: str, **fields: Any) -> dict[str, Any]:
    return {"type": "text", "text": text, **fields}


def _tool(call_id: str, status: str, **state: Any) -> dict[str, Any]:
    state = {"status": status, "input": {"command": "ls"}, **state}
    return {"type": "tool", "tool": "bash", "callID": call_id, "state": state}


def _read(tmp_path: Path, export: dict[str, Any]) -> list[Trajectory]:
    path = tmp_path / "session.jsonl"  # told by content: the name says nothing
    path.write_text(json.dumps(export, indent=1), encoding="utf-8")
    return load_trajectories(path)


def test_each_step_is_a_turn_and_each_call_is_answered_by_its_state(tmp_path: Path) -> None:
    export = _export(
        _user("m1", _text("fix it"), _text("[file read in]", synthetic=True)),
        _assistant(
            "m2",
            {"type": "reasoning", "text": "let me look"},
            _text("Looking."),
            _tool("c1", "completed", output="a.py", time={"start": 1, "end": 2, "compacted": 3}),
            _tool("c2", "error", error="Error: no such file"),
            {"type": "step-finish", "reason": "tool-calls"},
            {"type": "step-start"},
            _tool("c3", "running"),
            _tool("c4", "error", error="aborted", metadata={"interrupted": True, "output": "half"}),
        ),
        _user("m3", _text("not sent", ignored=True), _text("and the tests?")),
    )
    (trajectory,) = _read(tmp_path, export)
    got = [(m.role, m.text, m.status, [c.id for c in m.tool_calls]) for m in trajectory.messages]
    assert got == [
        ("user", "fix it\n[file read in]", None, []),
        ("assistant", "Looking.", None, ["c1", "c2"]),
        ("tool", "a.py", None, []),  # pruned later: read as the model first read it
        ("tool", "Error: no such file", "error", []),
        ("assistant", "", None, ["c3", "c4"]),
        ("tool", INTERRUPTED, "error", []),
        ("tool", "half", None, []),
        ("user", "and the tests?", None, []),
    ]
    assert trajectory.messages[1].tool_calls[0].args == {"command": "ls"}
    meta = trajectory.meta
    assert (meta["session_id"], meta["opencode_version"], meta["model"]) == (
        "ses_1",
        "1.14.30",
        "openai/gpt-5",
    )
    assert meta["skipped"] == {
        "assistant_part:reasoning": 1,
        "assistant_part:step-finish": 1,
        "ignored_text": 1,
        "pruned_outputs": 1,
    }


def test_an_assistant_message_that_failed_is_not_sent_unless_aborted_after_saying_something(
    tmp_path: Path,
) -> None:
    api_error = {"name": "APIError", "data": {"message": "overloaded"}}
    aborted = {"name": "MessageAbortedError", "data": {"message": "stopped"}}
    export = _export(
        _user("m1", _text("go")),
        _assistant("m2", _text("partial"), error=api_error),
        _assistant("m3", {"type": "reasoning", "text": "hm"}, error=aborted),
        _assistant("m4", _text("I was"), _tool("c1", "running"), error=aborted),
    )
    (trajectory,) = _read(tmp_path, export)
    assert [(m.role, m.text) for m in trajectory.messages] == [
        ("user", "go"),
        ("assistant", "I was"),
        ("tool", INTERRUPTED),
    ]
    skipped = trajectory.meta["skipped"]
    assert (
        skipped["assistant_error:APIError"],
        skipped["assistant_error:MessageAbortedError"],
    ) == (
        1,
        1,
    )


def test_a_finished_compaction_starts_a_new_context_window(tmp_path: Path) -> None:
    """OpenCode sends nothing before a compaction its summary answered: the session is two
    runs, the second starting from "What did we do so far?" and the summary."""
    export = _export(
        _user("m1", _text("go")),
        _assistant("m2", _tool("c1", "completed", output="x")),
        _assistant("m3", _text("done")),
        _user("m4", {"type": "compaction", "auto": True}),
        _assistant("m5", _text("We ran ls."), summary=True, finish="stop", parentID="m4"),
        _user("m6", _text("Continue if you have next steps", synthetic=True)),
        _assistant("m7", _tool("c2", "completed", output="y")),
    )
    before, after = _read(tmp_path, export)
    assert [(m.role, m.text) for m in before.messages] == [
        ("user", "go"),
        ("assistant", ""),
        ("tool", "x"),
        ("assistant", "done"),
    ]
    assert [(m.role, m.text) for m in after.messages] == [
        ("user", COMPACTION_PROMPT),
        ("assistant", "We ran ls."),
        ("user", "Continue if you have next steps"),
        ("assistant", ""),
        ("tool", "y"),
    ]
    assert (before.id, after.id) == ("session#w1", "session#w2")
    assert {session_name(before), session_name(after)} == {"session"}
    assert after.meta["compactions"] == 1 and after.meta["windows"] == 2
    # a compaction no summary answered (it failed) leaves one window
    unanswered = export["messages"][:4] + export["messages"][5:]
    (only,) = _read(tmp_path, _export(*unanswered))
    assert COMPACTION_PROMPT in [m.text for m in only.messages]


def test_an_export_without_an_assistant_turn_is_skipped_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "asked.json").write_text(
        json.dumps(_export(_user("m1", _text("hello")))), encoding="utf-8"
    )
    (tmp_path / "other.json").write_text(json.dumps({"messages": [{"info": 1}]}), encoding="utf-8")
    assert main(["replay", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "asked.json: no assistant turns to replay" in err
    assert "other.json: not a trajectory, nor a Claude Code, Codex, gemini-cli or OpenCode" in err


# -- any shape -----------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
IDS = st.sampled_from(["m1", "m2", "c1", "c2"])
STATE = st.fixed_dictionaries(
    {},
    optional={
        "status": st.sampled_from(["completed", "error", "pending", "running"]) | JSON,
        "input": JSON,
        "output": JSON,
        "error": JSON,
        "metadata": JSON | st.fixed_dictionaries({"interrupted": JSON, "output": JSON}),
        "time": JSON | st.fixed_dictionaries({"compacted": JSON}),
        "attachments": JSON,
    },
)
PART = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool", "step-start", "reasoning", "compaction"]) | JSON},
    optional={
        "text": JSON,
        "ignored": JSON,
        "tool": st.just("bash") | JSON,
        "callID": IDS | JSON,
        "state": STATE | JSON,
    },
)
INFO = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant"]) | JSON},
    optional={
        "id": IDS | JSON,
        "parentID": IDS | JSON,
        "summary": JSON,
        "finish": JSON,
        "error": JSON,
        "providerID": JSON,
        "modelID": JSON,
    },
)
MESSAGE = st.fixed_dictionaries({"info": INFO | JSON, "parts": st.lists(PART, max_size=4) | JSON})


def _one(info: Any = None, parts: Any = None) -> dict[str, Any]:
    """An export of one message whose info or parts are given (any JSON type)."""
    message = {"info": {"id": "m1", "role": "assistant"} if info is None else info}
    return _export(message | {"parts": [{"type": "step-start"}] if parts is None else parts})


# Fields of a type OpenCode never writes are read as absent: each is an example the test always
# runs, and the generated examples are the same on every run (derandomized, no database), so the
# test never passes or fails by the luck of a draw.
@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@example(export=_one(parts=True))
@example(export=_one(parts=[True, 3, None, "text"]))
@example(export=_one(info={"id": ["m1"], "role": "assistant", "error": {}}))
@example(export=_one(info={"id": {}, "parentID": [], "role": "user", "summary": True}))
@example(export=_one(parts=[{"type": "tool", "callID": 5, "tool": None, "state": "done"}]))
@example(export=_one(parts=[{"type": "tool", "callID": "c1", "tool": "bash", "state": True}]))
@example(export=_one(parts=[{"type": "tool", "callID": "c1", "tool": "bash", "state": []}]))
@example(
    export=_one(
        parts=[
            {
                "type": "tool",
                "callID": "c1",
                "tool": "bash",
                "state": {"status": "completed", "input": "ls", "output": 7, "time": []},
            },
            {"type": "tool", "callID": "c1", "tool": "bash", "state": {"status": "error"}},
        ]
    )
)
@example(
    export=_one(
        parts=[
            {
                "type": "tool",
                "callID": "c1",
                "tool": "bash",
                "state": {"status": "error", "error": None, "metadata": {"interrupted": True}},
            }
        ]
    )
)
@example(export=_one(info={"role": "user"}, parts=[{"type": "text", "text": 3, "ignored": "x"}]))
@example(export={"info": 3, "messages": [{"info": {"role": "user"}, "parts": []}, 4, None]})
@example(export={"messages": [{"info": {}, "parts": {}}]})
@given(export=st.fixed_dictionaries({"info": JSON, "messages": st.lists(MESSAGE, max_size=5)}))
def test_any_export_is_read_without_raising_and_pairs_up(export: dict[str, Any]) -> None:
    for messages, meta in read_native([export], "opencode"):
        problem = message_sequence_problem(messages)
        # what is read pairs up; a session the model never answered has nothing to replay
        assert problem is None or problem == "no assistant turns to replay"
        calls = [c.id for m in messages for c in m.tool_calls]
        assert len(calls) == len(set(calls))
        assert isinstance(meta["skipped"], dict)


@pytest.mark.parametrize(
    "content",
    [
        {"info": {}, "messages": [{"info": 1, "parts": [1]}]},
        {"info": {}, "messages": [{"info": {"role": "user"}, "parts": [{"type": "reasoning"}]}]},
        [{"info": {"role": "user"}, "parts": []}],
    ],
)
def test_an_export_with_nothing_to_read_is_a_format_error(tmp_path: Path, content: Any) -> None:
    path = tmp_path / "session.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(TrajectoryFormatError, match=r"session\.json"):
        load_trajectories(path)
