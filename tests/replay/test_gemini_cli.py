"""gemini-cli's own session files (``~/.gemini/tmp/<project>/chats/session-*.jsonl``), read as they
are: a session the real gemini-cli wrote (against the scripted fake Gemini upstream of the proxy
test, on 127.0.0.1) replays, and the record kinds of its format are each read as the CLI itself
reloads them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.proxy.test_proxy_gemini_cli import (
    ANSWER,
    COMMANDS,
    ERROR,
    GEMINI,
    _gemini_env,
    needs_gemini,
    scripted_model,
)
from tokenlean.cli import main
from tokenlean.replay._formats import load_trajectory, message_sequence_problem
from tokenlean.replay._native import read_native
from tokenlean.testing.upstream import FakeUpstream
from tokenlean.transcript import Message

META = {"sessionId": "5e55-10n", "projectHash": "e7a3", "startTime": "2026-12-05T10:59:49Z"}


def _call(call_id: str, command: str, result: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {
        "id": call_id,
        "name": "run_shell_command",
        "args": {"command": command},
    }
    if result is not None:
        call["result"] = [_response(call_id, result)]
    return call


def _response(call_id: str, output: Any) -> dict[str, Any]:
    response = output if isinstance(output, dict) else {"output": output}
    return {"functionResponse": {"id": call_id, "name": "run_shell_command", "response": response}}


def _user(record_id: str, *parts: Any) -> dict[str, Any]:
    return {"id": record_id, "type": "user", "content": list(parts)}


def _gemini(record_id: str, text: str = "", *calls: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"id": record_id, "type": "gemini", "content": text, "model": "m-1"}
    return record | ({"toolCalls": list(calls)} if calls else {})


def _read(tmp_path: Path, *records: Any, name: str = "session-1.jsonl") -> list[Message]:
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(r) for r in [META, *records]), encoding="utf-8")
    trajectory = load_trajectory(path)
    assert trajectory.meta["native_format"] == "gemini_cli"
    assert message_sequence_problem(trajectory.messages) is None
    return list(trajectory.messages)


def _shape(messages: list[Message]) -> list[tuple[str, str, list[str]]]:
    return [
        (m.role, m.tool_call_id or m.text, [c.args.get("command", "") for c in m.tool_calls])
        for m in messages
    ]


@needs_gemini
def test_a_session_the_real_gemini_cli_wrote_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _gemini_env(tmp_path, monkeypatch, settings=True)
    assert GEMINI is not None
    with FakeUpstream(script=scripted_model) as upstream:
        env = {**os.environ, "GOOGLE_GEMINI_BASE_URL": upstream.url}
        prompt = ["--yolo", "-p", "Run the tests and say what fails."]
        run = subprocess.run(
            [GEMINI, *prompt], cwd=project, env=env, capture_output=True, timeout=300
        )
    assert run.returncode == 0, run.stderr[-3000:]
    gemini = Path(os.environ["HOME"]) / ".gemini"
    (session,) = gemini.glob("tmp/*/chats/session-*.jsonl")
    trajectory = load_trajectory(session)
    assert trajectory.meta["native_format"] == "gemini_cli"
    assert trajectory.meta["repaired"] == {}
    turns = [m for m in trajectory.messages if m.role == "assistant"]
    assert [[c.args["command"] for c in t.tool_calls] for t in turns] == [
        *([c] for c in COMMANDS),
        [],
    ]
    assert turns[-1].text == ANSWER
    results = [m for m in trajectory.messages if m.role == "tool"]
    assert [r.tool_call_id for r in results] == [t.tool_calls[0].id for t in turns[:-1]]
    assert all(ERROR in r.text for r in results)
    assert "Run the tests and say what fails." in [m.text for m in trajectory.messages]
    # the whole folder, settings and project lists beside the sessions, replays
    assert main(["replay", "-j", "1", "-s", "shorten", str(gemini)]) == 0
    captured = capsys.readouterr()
    assert session.stem in captured.out
    assert "skipped" in captured.err and "settings.json" in captured.err


def test_a_record_written_again_keeps_its_place_and_its_last_content(tmp_path: Path) -> None:
    first = _gemini("g1", "")
    again = _gemini("g1", "", _call("c1", "ls"))
    messages = _read(
        tmp_path,
        _user("u1", {"text": "list it"}),
        first,
        {"$set": {"lastUpdated": "2026-12-05T11:00:00Z"}},
        again,
        _user("u2", _response("c1", "a.py\nb.py")),
        _gemini("g2", "two files"),
    )
    assert _shape(messages) == [
        ("user", "list it", []),
        ("assistant", "", ["ls"]),
        ("tool", "c1", []),
        ("assistant", "two files", []),
    ]
    assert messages[2].text == "a.py\nb.py"


def test_a_rewind_drops_that_message_and_every_later_one(tmp_path: Path) -> None:
    messages = _read(
        tmp_path,
        _user("u1", {"text": "first try"}),
        _gemini("g1", "an answer"),
        {"$rewindTo": "u1"},
        _user("u2", {"text": "second try"}),
        _gemini("g2", "another answer"),
    )
    assert [m.text for m in messages] == ["second try", "another answer"]


def test_set_messages_replaces_what_came_before(tmp_path: Path) -> None:
    kept = [_user("u9", {"text": "restored"}), _gemini("g9", "from the snapshot")]
    messages = _read(tmp_path, _user("u1", {"text": "gone"}), {"$set": {"messages": kept}})
    assert [m.text for m in messages] == ["restored", "from the snapshot"]


def test_results_recorded_only_on_the_calls_follow_their_turn(tmp_path: Path) -> None:
    messages = _read(
        tmp_path,
        _user("u1", {"text": "run both"}),
        _gemini("g1", "", _call("c1", "make", "built"), _call("c2", "make test", "1 failed")),
        _user("u2", {"text": "why?"}),
    )
    assert _shape(messages)[1:] == [
        ("assistant", "", ["make", "make test"]),
        ("tool", "c1", []),
        ("tool", "c2", []),
        ("user", "why?", []),
    ]
    assert [m.text for m in messages[2:4]] == ["built", "1 failed"]


def test_parallel_results_in_one_record_keep_their_order(tmp_path: Path) -> None:
    messages = _read(
        tmp_path,
        _user("u1", {"text": "go"}),
        _gemini("g1", "", _call("c1", "a", "from call"), _call("c2", "b", "from call")),
        _user("u2", _response("c2", "second"), _response("c1", {"error": "no such file"})),
        _gemini("g2", "done"),
    )
    assert [(m.tool_call_id, m.text) for m in messages if m.role == "tool"] == [
        ("c2", "second"),
        ("c1", "no such file"),
    ]


def test_what_the_model_never_read_is_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "session-2.jsonl"
    records = [
        META,
        _user("u1", {"text": "hi"}),
        {"id": "i1", "type": "info", "content": "Authenticated"},
        _gemini("g1", "hello") | {"thoughts": [{"subject": "greeting"}]},
        _gemini("g2", ""),
        {"something": "else"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    trajectory = load_trajectory(path)
    assert [m.text for m in trajectory.messages] == ["hi", "hello"]
    assert trajectory.meta["skipped"] == {
        "empty_turn": 1,
        "record:info": 1,
        "thoughts": 1,
        "unknown_line": 1,
    }
    assert trajectory.meta["model"] == "m-1" and trajectory.meta["session_id"] == "5e55-10n"


def test_a_session_from_before_0_61_is_one_object_and_reads_the_same(tmp_path: Path) -> None:
    records = [
        _user("u1", {"text": "run it"}),
        _gemini("g1", "", _call("c1", "make")),
        _user("u2", _response("c1", "built")),
        _gemini("g2", "it builds"),
    ]
    lines = _read(tmp_path, *records)
    old = tmp_path / "session-old.json"
    old.write_text(json.dumps({**META, "messages": records}), encoding="utf-8")
    trajectory = load_trajectory(old)
    assert trajectory.meta["native_format"] == "gemini_cli"
    assert _shape(list(trajectory.messages)) == _shape(lines)


def test_a_claude_code_line_is_not_taken_for_gemini_cli(tmp_path: Path) -> None:
    line = {"type": "user", "sessionId": "s", "message": {"role": "user", "content": "hi"}}
    path = tmp_path / "cc.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps(line), encoding="utf-8")
    assert load_trajectory(path).meta["native_format"] == "claude_code"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
PART = st.fixed_dictionaries(
    {},
    optional={
        "text": JSON | st.text(max_size=8),
        "functionResponse": JSON
        | st.fixed_dictionaries({"id": st.sampled_from(["c1", "c2"]), "response": JSON}),
    },
)
RECORD = st.fixed_dictionaries(
    {"id": st.sampled_from(["a", "b", "c"]) | JSON},
    optional={
        "type": st.sampled_from(["user", "gemini", "info"]) | JSON,
        "content": JSON | st.lists(PART, max_size=3),
        "toolCalls": JSON
        | st.lists(
            st.fixed_dictionaries(
                {"id": st.sampled_from(["c1", "c2"]) | JSON},
                optional={"name": JSON, "args": JSON, "result": JSON | st.lists(PART, max_size=2)},
            ),
            max_size=2,
        ),
        "$rewindTo": st.sampled_from(["a", "b", "zz"]) | JSON,
        "$set": JSON | st.fixed_dictionaries({"messages": JSON}),
        "thoughts": JSON,
    },
)


def _turn(**fields: Any) -> list[Any]:
    """A user's prompt, then a model turn whose fields are given (any JSON type)."""
    return [_user("u1", {"text": "go"}), {"id": "g1", "type": "gemini", **fields}]


# Fields of a type gemini-cli never writes are read as absent: each is an example the test always
# runs, and the generated examples are the same on every run (derandomized, no database), so the
# test never passes or fails by the luck of a draw.
@settings(max_examples=200, deadline=None, derandomize=True)
@example(records=_turn(toolCalls=True))
@example(records=_turn(toolCalls=7))
@example(records=_turn(toolCalls="c1"))
@example(records=_turn(toolCalls=None))
@example(records=_turn(toolCalls={"id": "c1", "name": "ls"}))
@example(records=_turn(toolCalls=[True, 3, "c1", None]))
@example(records=_turn(toolCalls=[{"id": 5, "name": ["ls"], "args": "ls", "result": True}]))
@example(records=_turn(toolCalls=[{"id": "c1", "name": None, "args": 3, "result": "ok"}]))
@example(records=_turn(content=False, model=3, thoughts=True))
@example(records=_turn(content=[None, 1, {"text": 2}, {"functionResponse": True}]))
@example(records=[_user("u1", {"functionResponse": {"id": 9, "response": None}}), False])
@example(records=[{"id": ["a"], "type": "user"}, {"$set": True}, {"$rewindTo": 4}])
@example(records=[{"$set": {"messages": "a"}}, {"sessionId": 1, "messages": [None, {"id": 2}]}])
@given(records=st.lists(RECORD | JSON, max_size=8))
def test_any_lines_are_read_without_raising_and_pair_up(records: list[Any]) -> None:
    ((messages, meta),) = read_native([META, *records], "gemini_cli")
    problem = message_sequence_problem(messages)
    # what is read pairs up; a session the model never answered has nothing to replay
    assert problem is None or problem == "no assistant turns to replay"
    assert isinstance(meta["skipped"], dict)
