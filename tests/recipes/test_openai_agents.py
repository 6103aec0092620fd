"""The README recipe for the OpenAI Agents SDK: its models take an ``AsyncOpenAI`` client, and
``tokenlean.openai.wrap`` of that client shortens what the agent re-sends.

A real ``agents.Agent`` runs with a real function tool against the recording fake provider over
a socket on 127.0.0.1, through both of the SDK's OpenAI models (Responses and Chat Completions),
and with the SDK's built-in shells (``ShellTool``, ``LocalShellTool``: ``shell_call_output`` and
``local_shell_call_output`` items) and its ``ApplyPatchTool`` (``apply_patch_call``, whose diff
is cut once it has run) through the Responses model; the test reads the bodies the provider
received.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents", reason="the recipe needs the openai-agents package")
openai = pytest.importorskip("openai")

import tokenlean.openai  # noqa: E402
from tokenlean.raw import RawSettings  # noqa: E402
from tokenlean.testing.upstream import (  # noqa: E402
    FakeUpstream,
    Recorded,
    Reply,
    chat_completion,
    json_reply,
    response_object,
)

NOISE = [
    f"collected item {i}: module pkg.part_{i % 9} loaded in {i % 7}.{i % 10}s" for i in range(400)
]
FAILED = "FAILED tests/test_api.py::test_login - KeyError: 'token'"
LOG = "\n".join([*NOISE[:200], FAILED, *NOISE[200:], "===== 1 failed, 399 passed in 4.20s ===="])


@agents.function_tool
def run_tests(target: str) -> str:
    """Run the test suite."""
    return LOG


def _shell(request: Any) -> Any:
    """The executor of both built-in shells: every command prints the test log."""
    return LOG


#: What the model patches in: a new module of 60 handlers.
DIFF = "\n".join(
    f"+def handler_{i}(request):\n+    return compute_value_{i}(request.payload)" for i in range(60)
)


class _Editor:
    """The host's editor behind ``ApplyPatchTool``: it records each diff it is given and answers
    with the test log (as a hook that runs the suite after each patch would)."""

    def __init__(self) -> None:
        self.diffs: list[str] = []

    def create_file(self, operation: Any) -> str:
        self.diffs.append(operation.diff)
        return LOG

    update_file = create_file

    def delete_file(self, operation: Any) -> str:
        return LOG


EDITOR = _Editor()


# The Responses API's calls of each tool, as the model sends them (``{turn}``: the call's number)
TOOLS: dict[str, tuple[Any, Callable[[int], dict[str, Any]]]] = {
    "function": (
        run_tests,
        lambda turn: {
            "type": "function_call",
            "id": f"fc_{turn}",
            "name": "run_tests",
            "arguments": json.dumps({"target": f"tests/ run {turn}"}),
        },
    ),
    "shell": (
        agents.ShellTool(executor=_shell),
        lambda turn: {
            "type": "shell_call",
            "id": f"sh_{turn}",
            "action": {"commands": ["cd app", f"pytest -q tests/ # run {turn}"]},
        },
    ),
    "local_shell": (
        agents.LocalShellTool(executor=_shell),
        lambda turn: {
            "type": "local_shell_call",
            "id": f"lsh_{turn}",
            "action": {"type": "exec", "command": ["pytest", "-q", f"tests/{turn}"], "env": {}},
        },
    ),
    "apply_patch": (
        agents.ApplyPatchTool(editor=EDITOR),
        lambda turn: {
            "type": "apply_patch_call",
            "id": f"ap_{turn}",
            "operation": {"type": "create_file", "path": f"app/handlers_{turn}.py", "diff": DIFF},
        },
    ),
}
CALLS = ("function_call", "shell_call", "local_shell_call", "apply_patch_call")
OUTPUTS = (
    "function_call_output",
    "shell_call_output",
    "local_shell_call_output",
    "apply_patch_call_output",
)


def _responses_script(calls: int, tool: str) -> Callable[[Recorded], Reply]:
    """Answer with ``calls`` calls of ``tool`` in turn, then a final text (Responses API)."""

    def reply(request: Recorded) -> Reply:
        turn = sum(1 for item in request.json()["input"] if item.get("type") in CALLS)
        if turn >= calls:
            return json_reply(response_object("The login test fails on a missing token."))
        done = response_object("")
        call = TOOLS[tool][1](turn) | {"call_id": f"call_{turn}", "status": "completed"}
        return json_reply({**done, "output": [call]})

    return reply


def _chat_script(calls: int) -> Callable[[Recorded], Reply]:
    """The same conversation on Chat Completions."""

    def reply(request: Recorded) -> Reply:
        turn = sum(1 for m in request.json()["messages"] if m.get("role") == "tool")
        if turn >= calls:
            return json_reply(chat_completion("The login test fails on a missing token."))
        done = chat_completion("")
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "run_tests", "arguments": json.dumps({"target": f"run {turn}"})},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
        return json_reply({**done, "choices": [choice]})

    return reply


def _outputs(body: dict[str, Any]) -> list[str]:
    """The tool results a request carries, in order (either API; a shell's its one chunk's
    stdout)."""
    if "input" in body:
        outputs = [i["output"] for i in body["input"] if i.get("type") in OUTPUTS]
        return [out if isinstance(out, str) else out[0]["stdout"] for out in outputs]
    return [m["content"] for m in body["messages"] if m.get("role") == "tool"]


def _run(
    api: str, wrap: bool, tmp_path: Path, calls: int = 2, tool: str = "function"
) -> list[dict[str, Any]]:
    """Run the agent against the fake provider; the bodies it received, oldest first."""
    agents.set_tracing_disabled(True)  # the tracer would post to api.openai.com
    script = _responses_script(calls, tool) if api == "responses" else _chat_script(calls)
    with FakeUpstream(script) as upstream:
        client = openai.AsyncOpenAI(base_url=upstream.url + "/v1", api_key="test", max_retries=0)
        if wrap:
            settings = RawSettings(originals_dir=tmp_path / "originals")
            client = tokenlean.openai.wrap(client, settings=settings)
        model_class = (
            agents.OpenAIResponsesModel if api == "responses" else agents.OpenAIChatCompletionsModel
        )
        agent = agents.Agent(
            name="tester",
            instructions="Find out why the suite fails.",
            tools=[TOOLS[tool][0]],
            model=model_class(model="gpt-test", openai_client=client),
        )
        result = agents.Runner.run_sync(agent, "Why does the suite fail?")
        assert result.final_output == "The login test fails on a missing token."
        return [r.json() for r in upstream.requests]


# each of the Responses model's tools, and the Chat Completions model's function tool
RUNS = [("responses", tool) for tool in TOOLS] + [("chat", "function")]


@pytest.mark.parametrize(("api", "tool"), RUNS)
def test_a_wrapped_client_shortens_what_the_agent_resends(
    api: str, tool: str, tmp_path: Path
) -> None:
    plain = _run(api, wrap=False, tmp_path=tmp_path, tool=tool)
    assert _outputs(plain[1]) == [LOG]  # without tokenlean the whole log goes back
    bodies = _run(api, wrap=True, tmp_path=tmp_path, tool=tool)
    assert len(bodies) == 3
    shortened = _outputs(bodies[1])[0]
    assert len(shortened) < len(LOG) / 3
    assert FAILED in shortened and "1 failed, 399 passed" in shortened
    kept = list((tmp_path / "originals").iterdir())
    assert kept and any(LOG in p.read_text(encoding="utf-8") for p in kept)
    assert str(tmp_path / "originals") in shortened  # the marker names the file to read


def test_a_shell_output_keeps_its_outcome_and_fields(tmp_path: Path) -> None:
    plain, shortened = (
        _run("responses", wrap=wrap, tmp_path=tmp_path, tool="shell")[1]["input"][-1]
        for wrap in (False, True)
    )
    assert plain["type"] == shortened["type"] == "shell_call_output"
    assert {k: v for k, v in shortened.items() if k != "output"} == {
        k: v for k, v in plain.items() if k != "output"
    }
    (chunk,), (before,) = shortened["output"], plain["output"]
    assert {k: v for k, v in chunk.items() if k != "stdout"} == {
        k: v for k, v in before.items() if k != "stdout"
    }
    assert len(chunk["stdout"]) < len(before["stdout"]) / 3


def test_a_patch_is_applied_whole_and_cut_once_it_has_run(tmp_path: Path) -> None:
    EDITOR.diffs.clear()
    bodies = _run("responses", wrap=True, tmp_path=tmp_path, tool="apply_patch")
    assert EDITOR.diffs == [DIFF, DIFF]  # the host's editor gets every diff whole
    (call,) = [item for item in bodies[1]["input"] if item.get("type") == "apply_patch_call"]
    assert call["call_id"] == "call_0" and call["status"] == "completed"
    operation = call["operation"]
    assert (operation["type"], operation["path"]) == ("create_file", "app/handlers_0.py")
    assert len(operation["diff"]) < len(DIFF) / 3
    assert operation["diff"].startswith("+def handler_0(request):")
    assert str(tmp_path / "originals") in operation["diff"]  # where the whole diff is kept


@pytest.mark.parametrize(("api", "tool"), RUNS)
def test_what_was_sent_is_sent_again_byte_for_byte(api: str, tool: str, tmp_path: Path) -> None:
    bodies = _run(api, wrap=True, tmp_path=tmp_path, calls=3, tool=tool)
    key = "input" if api == "responses" else "messages"
    for earlier, later in itertools.pairwise(bodies):
        sent = [json.dumps(item, sort_keys=True) for item in earlier[key]]
        again = [json.dumps(item, sort_keys=True) for item in later[key][: len(sent)]]
        assert again == sent  # the prompt cache keeps hitting
