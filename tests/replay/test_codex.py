"""Codex rollouts of the current CLI (code mode): outputs given as lists of parts, compactions,
lines the reader skips; and the native reading of Codex Desktop 0.144 sessions against the
converted runs of the same sessions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.data import NATIVE, TRAJECTORIES, shared_params
from tokenlean.replay._formats import (
    Trajectory,
    load_trajectories,
    load_trajectory,
    message_sequence_problem,
)

DESKTOP = sorted((NATIVE / "codex").glob("jdx_*.jsonl"))
CONVERTED = TRAJECTORIES / "codex_desktop_0144"
#: The one session of these with no converted run after its last compaction.
NOT_CONVERTED = "jdx_mise__04fb7b73ba2f"

CELL = 'const r = await tools.exec_command({cmd: "git status"}); text(r.output)\n'
HEADER = "Script completed\nWall time 0.1 seconds\nOutput:\n"


def _message(role: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}


def _exec(call_id: str, *output: dict[str, Any]) -> list[dict[str, Any]]:
    """A code-mode cell and its output, a list of parts."""
    call = {"type": "custom_tool_call", "call_id": call_id, "name": "exec", "input": CELL}
    return [call, {"type": "custom_tool_call_output", "call_id": call_id, "output": list(output)}]


def _text(text: str) -> dict[str, Any]:
    return {"type": "input_text", "text": text}


def _rollout(tmp_path: Path, *lines: tuple[str, dict[str, Any]]) -> Trajectory:
    """The rollout's last context window (the history the CLI resumes from)."""
    return load_trajectory(_write(tmp_path, *lines))


def _write(tmp_path: Path, *lines: tuple[str, dict[str, Any]]) -> Path:
    meta = {"id": "s-1", "cli_version": "0.144.5", "base_instructions": {"text": "You are Codex."}}
    rows = [{"type": "session_meta", "payload": meta}]
    rows += [{"type": kind, "payload": payload} for kind, payload in lines]
    path = tmp_path / "rollout-1.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows), encoding="utf-8")
    return path


def _items(*items: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [("response_item", item) for item in items]


def test_an_exec_cell_is_a_call_with_its_code_and_its_output_the_parts_joined(
    tmp_path: Path,
) -> None:
    trajectory = _rollout(
        tmp_path,
        *_items(_message("user", "status?"), *_exec("c1", _text(HEADER), _text("clean\n"))),
    )
    system, user, turn, result = trajectory.messages
    assert (system.role, system.text, user.text) == ("system", "You are Codex.", "status?")
    assert [(c.name, c.args) for c in turn.tool_calls] == [("exec", {"input": CELL})]
    assert (result.tool_call_id, result.content) == ("c1", HEADER + "clean\n")


def test_an_image_among_the_parts_is_kept_beside_the_text(tmp_path: Path) -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    parts = (_text(HEADER), _text("see the screenshot\n"), image)
    trajectory = _rollout(tmp_path, *_items(_message("user", "look"), *_exec("c1", *parts)))
    result = trajectory.messages[-1]
    assert result.content == ({"type": "text", "text": HEADER + "see the screenshot\n"}, image)
    assert not result.is_text_only
    assert message_sequence_problem(trajectory.messages) is None


def test_after_a_compaction_the_history_is_its_replacement(tmp_path: Path) -> None:
    """A compaction ends a context window: the one before it is a run of its own, and the next
    starts from its replacement history."""
    summary = {"type": "compaction", "encrypted_content": "gAAAA..."}
    history = [_message("user", "fix the build"), _message("developer", "<permissions/>"), summary]
    path = _write(
        tmp_path,
        *_items(_message("developer", "<permissions/>"), _message("user", "fix the build")),
        *_items(*_exec("before", _text("old output"))),
        ("compacted", {"message": "", "replacement_history": history}),
        ("world_state", {"full": True, "state": {}}),
        *_items(*_exec("after", _text("new output"))),
    )
    before, after = load_trajectories(path)
    assert [(m.role, m.text) for m in before.messages] == [
        ("system", "You are Codex.\n\n<permissions/>"),
        ("user", "fix the build"),
        ("assistant", ""),
        ("tool", "old output"),
    ]
    assert [(m.role, m.text) for m in after.messages] == [
        ("system", "You are Codex."),
        ("user", "fix the build"),
        ("user", "<permissions/>"),
        ("assistant", ""),
        ("tool", "new output"),
    ]
    assert (before.id, after.id) == ("rollout-1#w1", "rollout-1#w2")
    assert load_trajectory(path) == after
    for window, trajectory in enumerate((before, after), 1):
        assert trajectory.meta["window"] == window and trajectory.meta["windows"] == 2
        assert trajectory.meta["compactions"] == 1
    skipped = after.meta["skipped"]
    assert skipped["compacted_away"] == 3  # the user's message, the call and its output
    assert (skipped["dropped:compaction"], skipped["line:world_state"]) == (1, 1)


def test_a_compaction_without_a_replacement_keeps_the_users_messages_and_its_summary(
    tmp_path: Path,
) -> None:
    trajectory = _rollout(
        tmp_path,
        *_items(_message("developer", "<permissions/>"), _message("user", "fix the build")),
        *_items(*_exec("before", _text("old output"))),
        ("compacted", {"message": "Summary: the build fails in test_io."}),
        *_items(*_exec("after", _text("new output"))),
    )
    assert [(m.role, m.text) for m in trajectory.messages] == [
        ("system", "You are Codex.\n\n<permissions/>"),
        ("user", "fix the build"),
        ("user", "Summary: the build fails in test_io."),
        ("assistant", ""),
        ("tool", "new output"),
    ]


def test_lines_and_items_of_other_kinds_are_counted_not_read(tmp_path: Path) -> None:
    trajectory = _rollout(
        tmp_path,
        ("world_state", {"full": True}),
        ("sub_agent_event", {"agent": "/root/worker"}),
        *_items(_message("user", "go"), {"type": "agent_spawn", "agent_id": "a1"}),
        *_items(*_exec("c1", _text("ok"))),
        ("compacted", {"replacement_history": True}),
    )
    assert [m.role for m in trajectory.messages] == ["system", "user"]
    skipped = trajectory.meta["skipped"]
    assert skipped["line:world_state"] == skipped["line:sub_agent_event"] == 1
    assert skipped["item:agent_spawn"] == 1


@pytest.mark.parametrize("path", shared_params(DESKTOP), ids=lambda p: p.name[:30])
def test_a_desktop_rollout_reads_as_its_converted_runs(path: Path) -> None:
    """Where a converted run of the same session holds a call, the native reading holds the
    same call (name, arguments) and the same output, in one of its context windows."""
    windows = load_trajectories(path)
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    outputs: dict[str, str] = {}
    for window in windows:
        window_calls, window_outputs = _calls_and_outputs(window)
        assert not set(window_calls) & set(calls)  # a call is in the window it was made in
        calls |= window_calls
        outputs |= window_outputs
    session = windows[0].meta["session_id"]
    shared = 0
    for run in sorted(CONVERTED.glob("*.json")):
        converted = load_trajectory(run)
        if converted.meta.get("session_id") != session:
            continue
        their_calls, their_outputs = _calls_and_outputs(converted)
        common = sorted(set(calls) & set(their_calls))
        assert [c for c in common if calls[c] != their_calls[c]] == []
        assert [c for c in common if outputs[c] != their_outputs[c]] == []
        shared += len(common)
    if NOT_CONVERTED not in path.name:
        assert shared > 0


def _calls_and_outputs(
    trajectory: Trajectory,
) -> tuple[dict[str, tuple[str, dict[str, Any]]], dict[str, str]]:
    calls = {c.id: (c.name, dict(c.args)) for m in trajectory.messages for c in m.tool_calls}
    outputs = {str(m.tool_call_id): m.text for m in trajectory.messages if m.role == "tool"}
    return calls, outputs
