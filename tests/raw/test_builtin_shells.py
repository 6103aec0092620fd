"""The Responses API's built-in shells: ``shell_call`` / ``shell_call_output`` (a list of
``stdout``/``stderr`` chunks with their outcomes) and ``local_shell_call`` /
``local_shell_call_output`` (a string). Their outputs are shortened as a command's output; what
cannot be written back without losing something (several commands' exit codes, chunks that are
not text) passes through as the same objects. The real Agents SDK drives both shells in
``tests/recipes/test_openai_agents.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tokenlean.raw import RawSettings, openai_responses, rewrite_request

from .bodies import LONG

ERROR = "ERROR disk quota exceeded on /var/data"
EXIT_1 = {"type": "exit", "exit_code": 1}


def _shell(output: Any, **extra: Any) -> dict[str, Any]:
    call = {
        "type": "shell_call",
        "id": "sh_1",
        "call_id": "call_1",
        "action": {"commands": ["./nightly -v"], "timeout_ms": 60000},
        "status": "completed",
    }
    result = {"type": "shell_call_output", "call_id": "call_1", "output": output, **extra}
    return {"model": "gpt-5.1", "input": [{"role": "user", "content": "Fix it."}, call, result]}


def _local(**naming: str) -> dict[str, Any]:
    call = {
        "type": "local_shell_call",
        "id": "lsh_1",
        "call_id": "call_1",
        "action": {"type": "exec", "command": ["./nightly", "-v"], "env": {}},
        "status": "completed",
    }
    result = {"type": "local_shell_call_output", "output": LONG, **naming}
    return {"model": "codex-mini-latest", "input": [call, result]}


def test_one_chunk_is_shortened_with_its_stderr_and_keeps_its_outcome(
    settings: RawSettings,
) -> None:
    chunk = {"stdout": LONG, "stderr": "Traceback: quota", "outcome": EXIT_1, "created_by": "x"}
    body = _shell([chunk], max_output_length=100_000, id="sho_1")
    result = rewrite_request("openai_responses", body, settings=settings)
    assert result is not None and result.results_shortened == 1
    item = result.body["input"][2]
    assert {k: v for k, v in item.items() if k != "output"} == {
        k: v for k, v in body["input"][2].items() if k != "output"
    }
    (new,) = item["output"]
    assert new["outcome"] == EXIT_1 and new["created_by"] == "x" and new["stderr"] == ""
    assert ERROR in new["stdout"] and "Traceback: quota" in new["stdout"]
    assert len(new["stdout"]) < len(LONG) / 4
    assert result.body["input"][1] is body["input"][1]  # the call's action is never rewritten


def test_the_view_shows_the_command_and_both_streams() -> None:
    view = openai_responses.read(_shell([{"stdout": "out", "stderr": "err", "outcome": EXIT_1}]))
    assert view is not None
    turn, output = view.messages[1], view.messages[2]
    assert [(c.name, c.args) for c in turn.tool_calls] == [("shell", {"command": "./nightly -v"})]
    assert (output.tool_call_id, output.content) == ("call_1", "out\nerr")


@pytest.mark.parametrize(
    "output",
    [
        # two commands, each with its own exit code: never merged into one chunk
        [{"stdout": LONG, "stderr": "", "outcome": EXIT_1}, {"stdout": "ok", "stderr": ""}],
        [{"stdout": LONG, "stderr": {"bytes": 3}}],  # not text
        ["a string, not a chunk"],
        [],
        {"stdout": LONG},
    ],
)
def test_what_cannot_be_written_back_whole_passes_through(
    output: Any, settings: RawSettings
) -> None:
    body = _shell(output)
    result = rewrite_request("openai_responses", body, settings=settings)
    assert result is None or result.body["input"][2] is body["input"][2]


@pytest.mark.parametrize("naming", [{"call_id": "call_1"}, {"id": "lsh_1"}])
def test_a_local_shell_output_is_found_by_either_id(
    naming: dict[str, str], settings: RawSettings
) -> None:
    body = _local(**naming)
    view = openai_responses.read(body)
    assert view is not None
    assert view.messages[0].tool_calls[0].args == {"command": "./nightly -v"}
    assert view.messages[1].tool_call_id == "call_1"
    result = rewrite_request("openai_responses", body, settings=settings)
    assert result is not None and result.results_shortened == 1
    new = result.body["input"][1]
    assert {k: v for k, v in new.items() if k != "output"} == {
        k: v for k, v in body["input"][1].items() if k != "output"
    }
    assert ERROR in new["output"] and len(new["output"]) < len(LONG) / 4


def test_a_local_shell_output_naming_no_call_passes_through(settings: RawSettings) -> None:
    body = _local(id="lsh_unknown")
    result = rewrite_request("openai_responses", body, settings=settings)
    assert result is None or result.body == body
