"""``tokenlean.litellm`` with the real LiteLLM SDK and the real mini-swe-agent, over real sockets
to the fake provider on 127.0.0.1.

The LiteLLM SDK and mini-swe-agent live in their own environment (the Makefile says why): ``make
.venv-litellm-sdk/.installed`` (what ``.ci/run`` does), then ``TOKENLEAN_LITELLM_SDK=
.venv-litellm-sdk/bin/python``; that environment is used where it exists, or the test
environment itself when both are installed in it. ``driver.py`` runs there (with this checkout's
``src`` first on its path) while the fake provider runs here and records every body.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.data import CHAT_HISTORY, CHAT_TOOLS, ERROR, LOG, ROOT
from tokenlean.raw import RawSettings, rewrite_request
from tokenlean.testing.upstream import FakeUpstream, Recorded, canned, json_reply

NEEDED = ("litellm", "minisweagent")
INSTALL = (
    "make .venv-litellm-sdk/.installed, then TOKENLEAN_LITELLM_SDK=.venv-litellm-sdk/bin/python"
)


def _sdk_python() -> tuple[str | None, str]:
    """The interpreter that has the LiteLLM SDK and mini-swe-agent, or None and why not."""
    given = os.environ.get("TOKENLEAN_LITELLM_SDK")
    default = ROOT / ".venv-litellm-sdk" / "bin" / "python"
    python = given or (str(default) if default.exists() else sys.executable)
    if not Path(python).exists():
        return None, f"TOKENLEAN_LITELLM_SDK names {python}, which does not exist ({INSTALL})"
    if python == sys.executable:
        missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    else:  # find_spec only: importing LiteLLM takes seconds
        probe = f"import importlib.util as u; print(*[m for m in {NEEDED!r} if not u.find_spec(m)])"
        run = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
        missing = run.stdout.split() if run.returncode == 0 else list(NEEDED)
    if missing:
        names = " and ".join({"minisweagent": "mini-swe-agent"}.get(m, m) for m in missing)
        return None, f"{names} not installed for {python} ({INSTALL})"
    return python, ""


PYTHON, WHY = _sdk_python()
pytestmark = pytest.mark.skipif(PYTHON is None, reason=WHY)

#: A file and a line range in a marker: what the agent's bash tool reads with ``sed -n``.
MARKER = re.compile(r"full output: (\S+) lines (\d+)-(\d+)")
NEEDLE = "2024-05-01T12:16:40Z ERROR worker-3 needle: shard 42 checksum mismatch (got 000000)"
BUILD_LOG = "".join(
    NEEDLE + "\n"
    if i == 1000
    else f"2024-05-01T12:{i // 60 % 60:02d}:{i % 60:02d}Z INFO worker-{i % 8} batch {i} "
    f"processed in {i * 37 % 400 + 20}ms\n"
    for i in range(1, 2001)
)
#: The tool result mini-swe-agent sends for ``cat build.log`` (LitellmModel's template).
OBSERVATION = f"<returncode>0</returncode>\n<output>\n{BUILD_LOG}</output>"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # its output ends the run


def _drive(scenario: str, spec: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """Run ``driver.py scenario`` in the SDK's environment; what it reports."""
    assert PYTHON is not None
    spec = {**spec, "out": str(tmp_path / f"{scenario}.json")}
    (tmp_path / f"{scenario}-spec.json").write_text(json.dumps(spec))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),  # this checkout's tokenlean, whatever is installed there
        "XDG_CACHE_HOME": str(tmp_path / "cache"),  # so the default originals folder is here
        "MSWEA_GLOBAL_CONFIG_DIR": str(tmp_path / "mswea"),
        "MSWEA_SILENT_STARTUP": "1",
        "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": "1",  # a failing call fails the test at once
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # else LiteLLM fetches prices from GitHub
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    driver = Path(__file__).with_name("driver.py")
    command = [PYTHON, str(driver), scenario, str(tmp_path / f"{scenario}-spec.json")]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"driver {scenario}:\n{run.stdout[-3000:]}{run.stderr[-5000:]}"
    result: dict[str, Any] = json.loads(Path(spec["out"]).read_text())
    assert result["looked_up"] == []  # nothing but 127.0.0.1 was reached for
    return result


def _chats(upstream: FakeUpstream) -> list[Recorded]:
    return [r for r in upstream.requests if r.path == "/v1/chat/completions"]


def _messages_prefix(body: bytes) -> str:
    """A request body as sent, up to the end of its last message: what the next call of the
    conversation re-sends, so what must come back byte for byte for the prompt cache to hit."""
    text = body.decode()
    start = re.search(r'"messages"\s*:\s*', text)
    assert start is not None, text[:200]
    _, end = json.JSONDecoder().raw_decode(text, start.end())
    return text[: end - 1]  # without the closing bracket: the next call adds messages there


# --- mini-swe-agent ---------------------------------------------------------------------------


def _turn(n: int, command: str) -> dict[str, Any]:
    call = {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
    }
    message = {"role": "assistant", "content": f"Step {n}.", "tool_calls": [call]}
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    head = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": "gpt-test"}
    return {**head, "choices": [choice], "usage": usage}


def _agent_turns(request: Recorded) -> Any:
    """The model: print the log; read back what a marker names (else grep); submit."""
    if request.path != "/v1/chat/completions":
        return canned(request)
    results = [m["content"] for m in request.json()["messages"] if m.get("role") == "tool"]
    if not results:
        return json_reply(_turn(1, "cat build.log"))
    if len(results) == 1:
        found = MARKER.search(results[0])
        if found is None:
            return json_reply(_turn(2, "grep -n needle build.log"))
        path, first = found[1], int(found[2])
        return json_reply(_turn(2, f"sed -n '{first},{first + 2}p' {path}"))
    return json_reply(_turn(3, SUBMIT))


def test_mini_swe_agent_gets_outputs_shortened_with_a_way_back_it_has(tmp_path: Path):
    workdir = tmp_path / "repo"
    workdir.mkdir()
    (workdir / "build.log").write_text(BUILD_LOG)
    with FakeUpstream(_agent_turns) as plain, FakeUpstream(_agent_turns) as lean:
        spec = {"plain_url": plain.url, "lean_url": lean.url, "workdir": str(workdir)}
        result = _drive("agent", spec, tmp_path)
    assert result["plain"]["exit_status"] == result["lean"]["exit_status"] == "Submitted"
    before, after = _chats(plain), _chats(lean)
    assert len(before) == len(after) == 3
    assert before[1].json()["messages"][-1]["content"] == OBSERVATION  # without: all of it

    # (1) The long output reaches the model shortened ...
    sent = after[1].json()["messages"][-1]["content"]
    assert len(after[1].body) < len(before[1].body) // 20
    # (2) ... with the line the agent needs.
    assert NEEDLE in sent
    # (3) Each request re-sends the one before byte for byte: the prompt cache hits.
    for earlier, later in itertools.pairwise(after):
        assert later.body.decode().startswith(_messages_prefix(earlier.body) + ",")
    # (4) The marker names a file and lines, in the proxy's default folder, holding the original,
    # and the agent's bash tool read them back from there.
    found = MARKER.search(sent)
    assert found is not None, sent
    kept, first, last = Path(found[1]), int(found[2]), int(found[3])
    assert kept.parent == Path(result["originals_dir"]) == tmp_path / "cache/tokenlean/originals"
    assert kept.read_text() == OBSERVATION
    lines = OBSERVATION.splitlines(keepends=True)
    assert 1 <= first < last <= len(lines)
    read_back = after[2].json()["messages"][-1]["content"]
    shown = "".join(lines[first - 1 : first + 2])
    assert read_back == f"<returncode>0</returncode>\n<output>\n{shown}</output>"


# --- the SDK's calls: sync, positional, streamed, async, and what goes through unchanged -----

#: A message the rewrite does not read (the legacy function role): it must go as it came.
UNKNOWN: Any = [
    {"role": "user", "content": "run the tests"},
    {"role": "function", "name": "bash", "content": LOG},
]
REWRITTEN = ("sync", "positional", "stream", "async", "async-stream", "context")


def test_sdk_calls_are_rewritten_and_disable_restores(tmp_path: Path):
    originals = tmp_path / "originals"
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("not a folder")
    with FakeUpstream() as upstream:
        spec = {
            "url": upstream.url,
            "history": CHAT_HISTORY,
            "tools": CHAT_TOOLS,
            "unknown": UNKNOWN,
            "originals": str(originals),
            "not_a_folder": str(not_a_folder),
        }
        result = _drive("sdk", spec, tmp_path)
    by_case = {r.header("x-case"): r.json() for r in _chats(upstream)}
    assert set(by_case) == {*REWRITTEN, "unknown", "failing", "disabled", "unknown-disabled"}
    assert all(a.strip() == "Hello from the fake upstream" for a in result["answers"].values())
    settings = RawSettings(originals_dir=originals)
    expected = rewrite_request("openai_chat", {"messages": CHAT_HISTORY}, settings=settings)
    assert expected is not None
    shortened = expected.body["messages"][2]["content"]
    assert ERROR in shortened and len(shortened) < len(LOG) // 5
    for case in REWRITTEN:  # exactly the proxy's rewrite, the same bytes every time
        assert by_case[case]["messages"][2]["content"] == shortened, case
        assert by_case[case]["tools"] == CHAT_TOOLS
    assert by_case["stream"]["stream"] is by_case["async-stream"]["stream"] is True
    found = MARKER.search(shortened)
    assert found is not None and Path(found[1]).parent == originals == Path(result["originals_dir"])
    assert Path(found[1]).read_text() == LOG

    # Fail open: a rewrite that fails inside is logged, and the call goes as it came.
    assert by_case["failing"]["messages"][2]["content"] == LOG
    assert result["warnings"] and all("tokenlean" in line for line in result["warnings"])
    # A message the rewrite does not understand goes as LiteLLM would send it without tokenlean.
    assert by_case["unknown"]["messages"] == by_case["unknown-disabled"]["messages"]
    assert by_case["unknown"]["messages"][1]["content"] == LOG
    # Enabling twice wraps once; disable() (and leaving the with block) puts LiteLLM's own back.
    assert result["wrapped_once"] and result["restored"] and result["restored_after_with"]
    assert by_case["disabled"]["messages"][2]["content"] == LOG
