"""Sessions read as they are: a sub-agent's own transcript, a line type never seen, a file
still being written; and a replay's memory bounded by the session's length, not its square."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.data import NATIVE
from tokenlean.cli import main
from tokenlean.replay import bundled_paths, get_strategy
from tokenlean.replay._engine import measure_replay, replay, replay_measured
from tokenlean.replay._formats import load_trajectories, load_trajectory, session_name
from tokenlean.replay._metrics import PromptMeasurer
from tokenlean.replay._native import CUT_SHORT, read_native, stream_session
from tokenlean.replay._saver import LatestSaver
from tokenlean.tokens import EstimateCounter

#: The smallest real Claude Code session of the shared data (2.1.12, Bash and Read calls).
SMALL = NATIVE / "claude_code" / "entireio_cli__28_a8bc758709_0_full.jsonl"
TIMINGS = {"middleware_ms_per_call", "middleware_seconds", "wall_seconds"}


def _real_lines() -> list[dict[str, Any]]:
    if not SMALL.is_file():
        pytest.skip(f"needs the shared data folder: {SMALL} is not there")
    return [json.loads(line) for line in SMALL.read_text(encoding="utf-8").splitlines() if line]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _line(kind: str, content: Any, message_id: str = "") -> dict[str, Any]:
    message = {"role": kind, "content": content}
    message |= {"id": message_id, "model": "claude-sonnet-5"} if kind == "assistant" else {}
    return {"type": kind, "sessionId": "s-1", "message": message}


def test_a_sub_agent_transcript_is_replayed_as_its_own_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Claude Code 2.1 writes a Task call's conversation to ``<session>/subagents/agent-<id>
    .jsonl``, every line a sidechain one: replayed as a session of its own, labelled so."""
    lines = _real_lines()
    turns = [d for d in lines if d.get("type") in ("user", "assistant")][:30]
    side = [{**d, "isSidechain": True, "agentId": "a1b2c3"} for d in turns]
    project = tmp_path / "project"
    session = _write(project / SMALL.name, lines)
    agent = _write(project / SMALL.stem / "subagents" / "agent-a1b2c3.jsonl", side)
    (read,) = load_trajectories(agent)
    assert read.messages == load_trajectory(_write(tmp_path / "plain.jsonl", turns)).messages
    assert read.meta["subagent"] == "a1b2c3" and "sidechain" not in read.meta["skipped"]
    assert session_name(read) == "agent-a1b2c3 (sub-agent)"
    assert "subagent" not in load_trajectory(session).meta
    assert main(["replay", str(project), "-s", "none", "-j", "1"]) == 0
    out, err = capsys.readouterr()
    assert "a sub-agent's transcript (agent a1b2c3), replayed as its own session" in err
    assert "agent-a1b2c3 (sub-agent)" in out and SMALL.stem in out


def test_a_line_type_never_seen_is_skipped_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
    lines = [
        _line("user", "list the files"),
        {"type": "hologram", "sessionId": "s-1", "payload": {"x": 1}},
        _line("assistant", [call], "m1"),
        _line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]),
        {"type": "summary", "summary": "ls"},
        _line("assistant", [{"type": "text", "text": "a.py"}], "m2"),
    ]
    trajectory = load_trajectory(_write(tmp_path / "new.jsonl", lines))
    assert [m.role for m in trajectory.messages] == ["user", "assistant", "tool", "assistant"]
    skipped = trajectory.meta["skipped"]
    assert skipped["unknown_type:hologram"] == 1 and skipped["line:summary"] == 1
    assert main(["replay", str(tmp_path / "new.jsonl"), "-s", "none", "-j", "1"]) == 0
    assert "1 line(s) of a type not known skipped: 'hologram' x1" in capsys.readouterr().err


def test_a_file_growing_while_read_is_read_up_to_its_last_whole_line(tmp_path: Path) -> None:
    """The lines are read as they are needed: what the agent appends meanwhile is read too, and
    a last line it has not finished is left out, named."""
    calls = [
        [
            _line("assistant", [{"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {}}]),
            _line("user", [{"type": "tool_result", "tool_use_id": f"t{i}", "content": f"{i}"}]),
        ]
        for i in range(150)
    ]
    for i, (ask, _) in enumerate(calls):
        ask["message"]["id"] = f"m{i}"
    head = [_line("user", "go"), *(line for pair in calls[:120] for line in pair)]
    path = _write(tmp_path / "live.jsonl", head)
    with path.open(encoding="utf-8") as file:
        session = stream_session(file)
        assert session is not None
        fmt, objects, stream = session
        more = "".join(json.dumps(line) + "\n" for pair in calls[120:] for line in pair)
        with path.open("a", encoding="utf-8") as writer:  # the agent writes on meanwhile
            writer.write(more + json.dumps(_line("user", "and then"))[:30])
        ((messages, _),) = read_native(objects, fmt)
    assert sum(m.role == "tool" for m in messages) == 150
    assert stream.bad == [(1 + 2 * 150 + 1, CUT_SHORT)]


def test_a_replay_holds_no_prompt_and_one_checkpoint() -> None:
    """What made memory grow with the square of a session's length, checked by structure (no
    timing, no machine noise): a measured replay keeps no call's messages (each was measured as
    it came), and its checkpointer ends holding one checkpoint and one value per channel."""
    trajectory = load_trajectory(next(p for p in bundled_paths() if "django-11001" in p.name))
    seen: list[int] = []
    savers: list[LatestSaver] = []

    class Watched(LatestSaver):
        def __init__(self) -> None:
            super().__init__()
            savers.append(self)

    from tokenlean.replay import _engine

    original = _engine.LatestSaver
    _engine.LatestSaver = Watched  # type: ignore[misc]  # to inspect the replay's own saver
    try:
        result = replay(trajectory, on_call=lambda call: seen.append(len(call.messages)))
    finally:
        _engine.LatestSaver = original  # type: ignore[misc]  # restored
    assert len(seen) == len(result.calls) > 10 and seen == sorted(seen) and seen[0] > 0
    assert all(call.messages == [] for call in result.calls)
    (saver,) = savers
    ((checkpoints),) = saver.storage[trajectory.id].values()
    assert len(checkpoints) == 1
    versions = saver.get_tuple({"configurable": {"thread_id": trajectory.id}})
    assert versions is not None
    assert len(saver.blobs) <= len(versions.checkpoint["channel_versions"])


@pytest.mark.parametrize("strategy", ["none", "context-editor-plain-10k"])
def test_measuring_each_call_as_it_comes_gives_the_same_figures(strategy: str) -> None:
    trajectory = load_trajectory(next(p for p in bundled_paths() if "django-11001" in p.name))
    measurer = PromptMeasurer(EstimateCounter())

    def middleware() -> list[Any]:  # a fresh one per replay
        return get_strategy(strategy).factory()

    streamed = replay_measured(trajectory, middleware(), measurer, strategy=strategy)
    after = measure_replay(
        trajectory, replay(trajectory, middleware()), measurer, strategy=strategy
    )
    if strategy != "none":  # the middleware did edit the prompts measured
        assert (
            streamed.tokens_sent
            < replay_measured(trajectory, [], measurer, strategy="-").tokens_sent
        )
    figures = {k: v for k, v in streamed.to_dict().items() if k not in TIMINGS}
    assert figures == {k: v for k, v in after.to_dict().items() if k not in TIMINGS}
    assert streamed.call_tokens == after.call_tokens and streamed.calls > 10
