from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_to_dict,
)

from tests.data import HAVE_SHARED, TRAJECTORIES, needs_shared, shared_params, trajectory_paths
from tokenlean.replay._formats import TrajectoryFormatError, load_trajectory, parse_trajectory


def _write(tmp_path: Path, data: Any, name: str = "trace.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _licenses_by_source() -> dict[str, str]:
    """The license SOURCES.md names for each trajectory folder (its table's third column)."""
    found: dict[str, str] = {}
    for line in (TRAJECTORIES.parent / "SOURCES.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("trajectories/"):
            continue
        for folder in cells[0].removeprefix("trajectories/").split(","):
            found[folder.strip()] = cells[2].split()[0]  # "Apache-2.0 at the cited commits"
    return found


def _index() -> dict[str, dict[str, Any]]:
    rows = (json.loads(line) for line in (TRAJECTORIES / "index.jsonl").open(encoding="utf-8"))
    return {row["file"]: row for row in rows}


LICENSES = _licenses_by_source() if HAVE_SHARED else {}
INDEX = _index() if HAVE_SHARED else {}


@pytest.mark.parametrize("path", shared_params(trajectory_paths()[::7]), ids=lambda p: p.stem[:40])
def test_neutral_shared_trajectories_load(path: Path) -> None:
    trajectory = load_trajectory(path)
    raw = json.loads(path.read_text())
    assert trajectory.id == raw["id"]
    assert len(trajectory.messages) == len(raw["messages"])
    # Sources differ in license (MIT, Apache-2.0): the file says its own, as the index does.
    row = INDEX[f"{path.parent.name}/{path.name}"]
    assert trajectory.license == row["license"]
    assert trajectory.license.split()[0] == LICENSES[path.parent.name]
    calls = {c.id for m in trajectory.messages for c in m.tool_calls}
    assert {m.tool_call_id for m in trajectory.messages if m.role == "tool"} <= calls


@needs_shared
def test_every_shared_trajectory_carries_the_license_of_its_source() -> None:
    folders = {path.parent.name for path in trajectory_paths()}
    assert folders <= set(LICENSES), folders - set(LICENSES)  # every folder is in SOURCES.md
    for name, row in INDEX.items():
        assert row["license"].split()[0] == LICENSES[name.split("/")[0]], name


def test_langchain_dump(tmp_path: Path) -> None:
    history = [
        SystemMessage("sys"),
        HumanMessage("hi"),
        AIMessage("", tool_calls=[{"id": "c1", "name": "bash", "args": {"command": "ls"}}]),
        ToolMessage("a.py", tool_call_id="c1", name="bash", status="error"),
        AIMessage("done"),
    ]
    trajectory = load_trajectory(_write(tmp_path, messages_to_dict(history)))
    roles = [m.role for m in trajectory.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert trajectory.messages[2].tool_calls[0].args == {"command": "ls"}
    assert trajectory.messages[3].status == "error"


def test_openai_chat_completions(tmp_path: Path) -> None:
    data = {
        "messages": [
            {"role": "developer", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "list files"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
            {"role": "assistant", "content": "a.py"},
        ]
    }
    trajectory = load_trajectory(_write(tmp_path, data))
    assert trajectory.messages[0].role == "system"
    assert trajectory.messages[1].text == "list files"
    assert trajectory.messages[2].tool_calls[0].args == {"command": "ls"}
    assert trajectory.messages[3].tool_call_id == "call_1"


def test_anthropic_messages(tmp_path: Path) -> None:
    data = {
        "system": [{"type": "text", "text": "you are helpful"}],
        "messages": [
            {"role": "user", "content": "list files"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "I'll look."},
                    {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"c": "ls"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "a.py",
                        "is_error": True,
                    }
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "a.py"}]},
        ],
    }
    trajectory = load_trajectory(_write(tmp_path, data))
    roles = [m.role for m in trajectory.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert trajectory.messages[0].text == "you are helpful"
    assert trajectory.messages[2].tool_calls[0].args == {"c": "ls"}
    assert trajectory.messages[3].status == "error"
    assert trajectory.messages[3].tool_call_id == "toolu_1"


@pytest.mark.parametrize(
    ("data", "position", "problem"),
    [
        ({"messages": "nope"}, "messages", "expected a list"),
        ([], "$", "no messages"),
        ([{"content": "x"}], "$[0]", "needs a 'role'"),
        ([{"role": "robot", "content": "x"}], "$[0].role", "unknown role"),
        ([{"role": "tool", "content": "x"}], "$[0].tool_call_id", "needs a tool_call_id"),
        ([{"role": "user", "content": 5}], "$[0].content", "content must be text"),
        (
            [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "1", "function": {"name": "f", "arguments": "{"}}],
                }
            ],
            "$[0].tool_calls[0].function.arguments",
            "invalid JSON",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"id": "1", "args": {}}]}],
            "$[0].tool_calls[0].name",
            "needs a name",
        ),
        ([{"type": "martian", "data": {}}], "$[0].type", "unknown LangChain message type"),
        (
            {"messages": [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]},
            "messages[0].content[0].tool_use_id",
            "needs a tool_use_id",
        ),
    ],
)
def test_malformed_input_names_file_and_position(
    tmp_path: Path, data: Any, position: str, problem: str
) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(TrajectoryFormatError) as info:
        load_trajectory(path)
    assert info.value.source == str(path)
    assert info.value.position == position
    assert problem in info.value.problem
    assert str(path) in str(info.value)


def test_invalid_json_gives_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n  {"role": "user",\n  "content": }\n]')
    with pytest.raises(TrajectoryFormatError, match=r"broken.json: line 3 column 14: invalid JSON"):
        load_trajectory(path)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(TrajectoryFormatError, match="file"):
        load_trajectory(tmp_path / "missing.json")
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(TrajectoryFormatError):
        load_trajectory(binary)


def test_parse_without_file() -> None:
    trajectory = parse_trajectory([{"role": "user", "content": "x"}], default_id="t")
    assert trajectory.id == "t"
