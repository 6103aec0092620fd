"""Claude Code transcripts and Codex rollouts read as they are on disk, and replayed per session.

Counts are taken from the raw lines here, independently of the readers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from tests.data import NATIVE, shared_params
from tokenlean.cli import main
from tokenlean.langchain import ToolOutputShorteningMiddleware
from tokenlean.replay._engine import replay
from tokenlean.replay._formats import (
    Trajectory,
    TrajectoryFormatError,
    load_trajectories,
    load_trajectory,
    message_sequence_problem,
    session_name,
)
from tokenlean.replay._native import MISSING_RESULT, repair_pairing
from tokenlean.transcript import Message, ToolCall

CLAUDE = sorted((NATIVE / "claude_code").glob("*.jsonl"))
CODEX = sorted((NATIVE / "codex").glob("*.jsonl"))
OPENCODE = sorted((NATIVE / "opencode").glob("*.json"))
TYPED_WHILE_RUNNING = NATIVE / "claude_code" / "entireio_cli__d6_5f53d0e8e2_0_full.jsonl"
#: A Codex session whose test run fails in a conftest, reported with pytest's short frames.
CONFTEST_FAILURE = (
    NATIVE
    / "codex"
    / (
        "bumpy-croc_ai-trading-bot__rollout-2025-10-17T22-40-02-"
        "0199f41d-9079-7662-ba8d-eff8c75f8a7a.jsonl"
    )
)
#: A code review: the agent reads its branch's diff, then briefs six sub-agents with its lines.
BRANCH_REVIEW = NATIVE / "claude_code" / "entireio_cli__51_0c10bf7b7a_0_full.jsonl"
NO_TOOLS = "ThalesMMS_vLLM-config"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _claude_main(path: Path) -> list[dict[str, Any]]:
    """The main conversation's message lines (no sub-agents, no Claude Code's own lines)."""
    return [
        d
        for d in _lines(path)
        if d.get("type") in ("user", "assistant")
        and not d.get("isSidechain")
        and d["message"].get("model") != "<synthetic>"
    ]


def _blocks(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        b
        for d in lines
        if isinstance(d["message"]["content"], list)
        for b in d["message"]["content"]
        if b.get("type") == kind
    ]


def _calls(messages: tuple[Message, ...]) -> list[str]:
    return [c.id for m in messages for c in m.tool_calls]


def _results(messages: tuple[Message, ...]) -> list[str]:
    """The calls answered by a result the session recorded."""
    return [str(m.tool_call_id) for m in messages if m.role == "tool" and m.text != MISSING_RESULT]


def _unanswered(messages: tuple[Message, ...]) -> list[str]:
    """The calls the reader gave :data:`MISSING_RESULT` (the session never recorded theirs)."""
    return [str(m.tool_call_id) for m in messages if m.role == "tool" and m.text == MISSING_RESULT]


def _difference(got: list[Any], want: list[Any]) -> str | None:
    """Where two long lists first differ, in a few words (None when equal): a failing assertion
    then shows this, not a diff pytest would take minutes to build from the whole lists."""
    if got == want:
        return None
    pairs = enumerate(zip(got, want, strict=False))
    at = next((i for i, (g, w) in pairs if g != w), min(len(got), len(want)))
    shown = [repr(x[at])[:200] if at < len(x) else "<end>" for x in (got, want)]
    return f"lengths {len(got)} and {len(want)}, first difference at {at}: {' != '.join(shown)}"


@pytest.mark.parametrize("path", shared_params(CLAUDE), ids=lambda p: p.name[:30])
def test_claude_code_transcript_reads_to_a_valid_trajectory(path: Path) -> None:
    lines = _claude_main(path)
    trajectory = load_trajectory(path)
    assert trajectory.meta["native_format"] == "claude_code"
    assert message_sequence_problem(trajectory.messages) is None
    calls = [b["id"] for b in _blocks(lines, "tool_use")]
    results = [b["tool_use_id"] for b in _blocks(lines, "tool_result")]
    assert _difference(_calls(trajectory.messages), calls) is None
    assert _difference(sorted(_results(trajectory.messages)), sorted(results)) is None
    unanswered = sorted(set(calls) - set(results))
    assert _difference(sorted(_unanswered(trajectory.messages)), unanswered) is None
    # one assistant turn per API message, however many lines Claude Code split it over
    ids = {d["message"]["id"] for d in lines if d["type"] == "assistant"}
    order = sorted(ids, key=[d["message"].get("id") for d in lines].index)
    assert _difference([m.id for m in trajectory.messages if m.role == "assistant"], order) is None
    assert len(ids) < sum(d["type"] == "assistant" for d in lines)
    # a prompt queued while the agent worked reached the model: it is a user message
    queued = [a["prompt"] for a in _attachments(path, "queued_command")]
    users = [m.text for m in trajectory.messages if m.role == "user"]
    assert [prompt for prompt in queued if prompt not in users] == []


@pytest.mark.parametrize("path", shared_params(CODEX), ids=lambda p: p.name[:30])
def test_codex_rollout_reads_to_a_valid_trajectory_per_context_window(path: Path) -> None:
    """Each context window (the history a ``compacted`` line left, then what followed it) is a
    run of its own, holding that window's calls and outputs; every call of the rollout is in
    one of them."""
    windows = _codex_windows(path)
    trajectories = load_trajectories(path)
    assert len(trajectories) == len(windows)
    if len(windows) > 1:
        assert [t.id for t in trajectories] == [
            f"{path.stem}#w{n}" for n in range(1, len(windows) + 1)
        ]
        assert {session_name(t) for t in trajectories} == {path.stem}
    for items, trajectory in zip(windows, trajectories, strict=True):
        _check_codex_window(items, trajectory)
    # every call the rollout logged is in the window it was made in, and in no other
    logged = [line["payload"] for line in _lines(path) if line["type"] == "response_item"]
    every_call = [c for t in trajectories for c in _calls(t.messages)]
    assert _difference(every_call, _codex_calls(logged)) is None


def _check_codex_window(items: list[dict[str, Any]], trajectory: Trajectory) -> None:
    calls = _codex_calls(items)
    outputs = [i for i in items if i["type"].endswith("_call_output")]
    assert trajectory.meta["native_format"] == "codex"
    assert _difference(_calls(trajectory.messages), calls) is None
    assert _difference(_results(trajectory.messages), [o["call_id"] for o in outputs]) is None
    answered = {o["call_id"] for o in outputs}
    assert _unanswered(trajectory.messages) == [c for c in calls if c not in answered]
    # outputs as the model read them: the {"output", "metadata"} JSON string stays a string,
    # a list of text parts is their text
    tools = [m.text for m in trajectory.messages if m.role == "tool" and m.text != MISSING_RESULT]
    assert _difference(tools, [_codex_output(o["output"]) for o in outputs]) is None
    if NO_TOOLS in trajectory.id:
        assert message_sequence_problem(trajectory.messages) == "no assistant turns to replay"
    else:
        assert message_sequence_problem(trajectory.messages) is None
        assert trajectory.meta["skipped"]["dropped:reasoning"] > 0


def _codex_calls(items: list[dict[str, Any]]) -> list[str]:
    return [i["call_id"] for i in items if i["type"] in ("function_call", "custom_tool_call")]


def _codex_windows(path: Path) -> list[list[dict[str, Any]]]:
    """The items of each context window of a rollout: those up to a compaction, then the
    ``replacement_history`` it left and the items after it."""
    windows: list[list[dict[str, Any]]] = [[]]
    for line in _lines(path):
        if line["type"] == "compacted":
            windows.append(list(line["payload"].get("replacement_history") or []))
        elif line["type"] == "response_item":
            windows[-1].append(line["payload"])
    return windows


def _codex_output(output: str | list[dict[str, Any]]) -> str:
    return output if isinstance(output, str) else "".join(part["text"] for part in output)


def _attachments(path: Path, kind: str) -> list[dict[str, Any]]:
    return [
        d["attachment"]
        for d in _lines(path)
        if d.get("type") == "attachment" and d["attachment"].get("type") == kind
    ]


@pytest.mark.parametrize(
    "output",
    [
        {"type": "function_call_output", "call_id": "call_1"},  # what Codex sends back
        {"type": "local_shell_call_output", "call_id": "call_1"},  # what the Agents SDK sends
    ],
)
def test_a_local_shell_call_in_a_rollout_is_a_named_call(
    output: dict[str, Any], tmp_path: Path
) -> None:
    call = {
        "type": "local_shell_call",
        "id": "lsh_1",
        "call_id": "call_1",
        "status": "completed",
        "action": {"type": "exec", "command": ["bash", "-lc", "pytest -q"], "env": {}},
    }
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}
    lines = [
        {"type": "session_meta", "payload": {"id": "s-1"}},
        *({"type": "response_item", "payload": item} for item in (user, call)),
        {"type": "response_item", "payload": {**output, "output": "1 failed, 9 passed"}},
    ]
    path = tmp_path / "rollout-1.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    trajectory = load_trajectory(path)
    (turn,) = [m for m in trajectory.messages if m.role == "assistant"]
    assert [(c.id, c.name, c.args["command"]) for c in turn.tool_calls] == [
        ("call_1", "local_shell", ["bash", "-lc", "pytest -q"])
    ]
    assert _results(trajectory.messages) == ["call_1"]
    assert trajectory.messages[-1].text == "1 failed, 9 passed"
    assert trajectory.meta["repaired"] == {}


def test_an_apply_patch_call_in_a_rollout_is_a_named_call(tmp_path: Path) -> None:
    call = {
        "type": "apply_patch_call",
        "id": "ap_1",
        "call_id": "call_1",
        "status": "completed",
        "operation": {"type": "update_file", "path": "app.py", "diff": "@@\n-a\n+b"},
    }
    output = {"type": "apply_patch_call_output", "call_id": "call_1", "output": "Updated app.py"}
    lines = [
        {"type": "session_meta", "payload": {"id": "s-1"}},
        *({"type": "response_item", "payload": item} for item in (call, output)),
    ]
    path = tmp_path / "rollout-1.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    trajectory = load_trajectory(path)
    (turn,) = [m for m in trajectory.messages if m.role == "assistant"]
    assert [(c.id, c.name, c.args) for c in turn.tool_calls] == [
        ("call_1", "apply_patch", {"input": "@@\n-a\n+b", "path": "app.py"})
    ]
    assert _results(trajectory.messages) == ["call_1"]
    assert trajectory.messages[-1].text == "Updated app.py"


def test_a_message_typed_while_tools_ran_follows_the_results() -> None:
    if not TYPED_WHILE_RUNNING.is_file():
        pytest.skip(f"needs the shared data folder: {TYPED_WHILE_RUNNING} is not there")
    messages = load_trajectory(TYPED_WHILE_RUNNING).messages
    typed = "do we need to fix up the downstream uses of LastInteractionAt?"
    at = next(i for i, m in enumerate(messages) if m.role == "user" and m.text == typed)
    turn = max(i for i in range(at) if messages[i].role == "assistant")
    answered = {messages[i].tool_call_id for i in range(turn + 1, at)}
    assert {c.id for c in messages[turn].tool_calls} == answered
    assert "toolu_01S13G7bwysrzFABcSuaQUnJ" in answered


def test_sidechain_lines_are_another_conversation(tmp_path: Path) -> None:
    path = CLAUDE[0] if CLAUDE else None
    if path is None:
        pytest.skip(f"needs the shared data folder: {NATIVE} is not there")
    lines = _lines(path)
    side = [
        {**d, "isSidechain": True, "uuid": f"side-{i}", "message": {**d["message"], "id": f"s{i}"}}
        for i, d in enumerate(lines)
        if d.get("type") in ("user", "assistant")
    ]
    mixed = tmp_path / "session.jsonl"
    mixed.write_text("\n".join(json.dumps(d) for d in [*lines, *side]), encoding="utf-8")
    alone, with_side = load_trajectory(path), load_trajectory(mixed)
    assert with_side.messages == alone.messages
    assert with_side.meta["skipped"]["sidechain"] == len(side)


def _claude_line(kind: str, content: Any, **fields: Any) -> dict[str, Any]:
    message = {"role": kind, "content": content}
    if kind == "assistant":
        message |= {"id": fields.pop("message_id"), "model": "claude-sonnet-5"}
    return {"type": kind, "sessionId": "s-1", "message": message, **fields}


def test_a_claude_code_compaction_starts_a_new_context_window(tmp_path: Path) -> None:
    """After a ``compact_boundary`` the model is sent the summary and what follows, nothing
    before: each window is a run of its own."""
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}
    summary = "This session is being continued from a previous conversation. Summary: ls ran."
    boundary = {
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
    }
    lines = [
        _claude_line("user", "list the files"),
        _claude_line("assistant", [call], message_id="msg_1"),
        _claude_line("user", [result]),
        {**boundary, "compactMetadata": {"trigger": "auto", "preTokens": 155025}},
        _claude_line("user", [{"type": "text", "text": summary}], isCompactSummary=True),
        _claude_line("assistant", [{"type": "text", "text": "Done."}], message_id="msg_2"),
        {**boundary, "isSidechain": True},  # a sub-agent's compaction: another conversation
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    before, after = load_trajectories(path)
    assert [(m.role, m.text) for m in before.messages] == [
        ("user", "list the files"),
        ("assistant", ""),
        ("tool", "a.py"),
    ]
    assert [(m.role, m.text) for m in after.messages] == [("user", summary), ("assistant", "Done.")]
    assert (before.id, after.id) == ("session#w1", "session#w2")
    assert before.meta["compactions"] == 1 and before.meta["skipped"]["sidechain"] == 1
    assert load_trajectory(path) == after


def test_a_session_cut_short_is_read_and_says_which_line_it_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A live session ends in a line still being written: the rest replays, and the note says
    which line was left out and why; a bad line inside is named too, never the whole file."""
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}
    lines = [
        json.dumps(_claude_line("user", "list the files")),
        json.dumps(_claude_line("assistant", [call], message_id="msg_1")),
        json.dumps(_claude_line("user", [result])),
        json.dumps(_claude_line("assistant", [{"type": "text", "text": "a.py"}], message_id="m2")),
    ]
    live = tmp_path / "live.jsonl"
    live.write_text("\n".join([*lines, lines[-1][:25]]), encoding="utf-8")  # no newline yet
    trajectory = load_trajectory(live)
    assert [m.role for m in trajectory.messages] == ["user", "assistant", "tool", "assistant"]
    assert trajectory.meta["bad_lines"] == [(5, "cut short (still being written?)")]
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([lines[0], "{oops", *lines[1:]]) + "\n", encoding="utf-8")
    assert load_trajectory(broken).meta["bad_lines"][0][0] == 2
    assert main(["replay", str(live), "-s", "none", "-j", "1"]) == 0
    assert "line 5 (cut short (still being written?))" in capsys.readouterr().err
    text = tmp_path / "notes.jsonl"
    text.write_text('{"a": 1}\n{"b": 2}\n{"c":', encoding="utf-8")
    with pytest.raises(TrajectoryFormatError, match=r"notes\.jsonl: line 3: invalid JSON: cut"):
        load_trajectory(text)


def test_pairing_is_repaired() -> None:
    call = ToolCall(id="a", name="Read", args={})
    messages = [
        Message(role="tool", content="left over", tool_call_id="z"),
        Message(role="user", content="go"),
        Message(role="assistant", tool_calls=(call,)),
        Message(role="user", content="interrupted"),
    ]
    out, repairs = repair_pairing(messages)
    assert [m.role for m in out] == ["user", "assistant", "tool", "user"]
    assert out[2].text == MISSING_RESULT and out[2].tool_call_id == "a"
    assert message_sequence_problem(out) is None
    assert repairs == {
        "orphan_results_dropped": 1,
        "missing_results_added": 1,
        "user_messages_moved_after_results": 1,
    }


def test_other_jsonl_is_a_clear_error_when_named_and_skipped_in_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text('{"event": "start"}\n{"event": "stop"}\n', encoding="utf-8")
    with pytest.raises(TrajectoryFormatError, match=r"events\.jsonl: lines: JSON lines, but not"):
        load_trajectory(log)
    assert main(["replay", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert (
        "skipped" in err
        and "not a trajectory, nor a Claude Code, Codex, gemini-cli or OpenCode session" in err
    )
    assert "no traces found" in err


@pytest.mark.parametrize("folder", shared_params([NATIVE] if CLAUDE and CODEX and OPENCODE else []))
def test_replay_on_the_agents_folders_prints_each_session_and_the_total(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A row per session and strategy; a compacted session's context windows are replayed each
    (so counted among the trajectories) and summed in its one row."""
    folders = [str(folder / agent) for agent in ("claude_code", "codex", "opencode")]
    assert main(["replay", "-j", "1", "-s", "shorten", *folders]) == 0
    captured = capsys.readouterr()
    out, err = captured.out, captured.err
    files = [p for p in [*CLAUDE, *CODEX, *OPENCODE] if NO_TOOLS not in p.name]
    windows = sum(len(_codex_windows(p)) - 1 for p in CODEX)
    assert windows > 0
    assert out.startswith(f"{len(files) + windows} trajectories x 2 strategies")
    total, per_session = out.split("\n\nsession ", 1)
    assert [line.split()[0] for line in total.splitlines()[4:6]] == ["none", "shorten"]
    for stem in (p.stem for p in files):
        rows = [line.split()[1] for line in per_session.splitlines() if line.startswith(stem)]
        assert rows == ["none", "shorten"], stem
    assert "no assistant turns to replay" in err and NO_TOOLS in err
    assert "jdx_hk__5b1a240e38c1-0.jsonl: compacted: 3 context windows, each replayed" in err


def test_a_reviewed_branch_diff_reaches_the_model_whole() -> None:
    """``git diff main...HEAD`` is the branch under review, as ``gh pr diff 45`` is, and the
    review quotes its removed and added lines (``G306``, ``os.WriteFile``): it stays whole, in a
    real ``create_agent`` loop, where the agent's own ``git diff`` would be cut as a log."""
    if not BRANCH_REVIEW.is_file():
        pytest.skip(f"needs the shared data folder: {BRANCH_REVIEW} is not there")
    trajectory = load_trajectory(BRANCH_REVIEW)
    calls = {c.id: c for m in trajectory.messages for c in m.tool_calls}
    diff = next(
        m
        for m in trajectory.messages
        if m.role == "tool" and calls[m.tool_call_id].args.get("command") == "git diff main...HEAD"
    )
    sent = _sent_shortened(trajectory, diff.tool_call_id)
    assert sent and all(text == diff.text for text in sent)


def test_pytests_short_frames_reach_the_model() -> None:
    """``src/risk/risk_manager.py:42: in RiskParameters`` is where the error is: the frames of
    a conftest's import failure stay when the test run's output is shortened."""
    if not CONFTEST_FAILURE.is_file():
        pytest.skip(f"needs the shared data folder: {CONFTEST_FAILURE} is not there")
    trajectory = load_trajectory(CONFTEST_FAILURE)
    frame = "src/risk/risk_manager.py:42: in RiskParameters"
    (result,) = [m for m in trajectory.messages if m.role == "tool" and frame in m.text]
    sent = _sent_shortened(trajectory, result.tool_call_id)
    assert sent and all(isinstance(text, str) and frame in text for text in sent)


def _sent_shortened(trajectory: Trajectory, call_id: str) -> list[Any]:
    """What each model call was sent as the result of ``call_id``, the session replayed through
    a real ``create_agent`` with the output shortener."""
    replayed = replay(trajectory, [ToolOutputShorteningMiddleware()])
    return [
        m.content
        for call in replayed.calls
        for m in call.messages
        if isinstance(m, ToolMessage) and m.tool_call_id == call_id
    ]


def test_a_named_file_that_is_no_trace_is_skipped_among_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``replay folder/*`` names a README beside the sessions: it is skipped, saying why, and
    the others replay; alone, it is an error."""
    readme = tmp_path / "README.md"
    readme.write_text("# sessions\n", encoding="utf-8")
    log = tmp_path / "events.jsonl"
    log.write_text('{"event": "start"}\n', encoding="utf-8")
    assert main(["replay", str(readme)]) == 2
    assert "README.md: line 1 column 1: invalid JSON" in capsys.readouterr().err
    assert main(["replay", "-j", "1", "-s", "none", str(readme), str(log)]) == 2
    err = capsys.readouterr().err
    assert f"skipped {readme}: line 1 column 1" in err and "no traces found" in err
    run = tmp_path / "run.json"
    turns = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    run.write_text(json.dumps({"id": "run", "messages": turns}), encoding="utf-8")
    assert main(["replay", "-j", "1", "-s", "none", str(readme), str(run)]) == 0
    captured = capsys.readouterr()
    assert f"skipped {readme}" in captured.err and "1 trajectory x 1 strategy" in captured.out
