"""End to end with the real gemini-cli: ``tokenlean wrap gemini --yolo -p ...`` against a scripted
fake Gemini upstream on 127.0.0.1. Skipped unless gemini-cli is installed::

    npm install --prefix ~/gemini @google/gemini-cli@0.61.0
    export TOKENLEAN_GEMINI=~/gemini/node_modules/.bin/gemini     # or put `gemini` on PATH

gemini-cli 0.61 runs offline here, given three things the test sets in a temporary ``HOME``:
``GEMINI_API_KEY``; ``{"security": {"auth": {"selectedType": "gemini-api-key"}}}`` in
``~/.gemini/settings.json`` (with ``GOOGLE_GEMINI_BASE_URL`` set and no auth type configured it
picks the "gateway" type and rejects it, exit code 41: ``tokenlean wrap gemini`` then prints
the fix); and ``GEMINI_CLI_TRUST_WORKSPACE=true`` (exit code 55 in an untrusted folder
otherwise). ``--yolo`` lets the shell tool run without a prompt. The CLI first asks a small
model to score the task (a ``generateContent`` call whose system prompt is the "Task Routing"
rubric), then runs the agent loop over ``streamGenerateContent?alt=sse``.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tokenlean.cli import main
from tokenlean.testing.upstream import (
    FakeUpstream,
    Recorded,
    Reply,
    gemini_response,
    json_reply,
    sse_event,
    sse_reply,
)

GEMINI = os.environ.get("TOKENLEAN_GEMINI") or shutil.which("gemini")
needs_gemini = pytest.mark.skipif(
    GEMINI is None or not Path(GEMINI).exists(),
    reason="gemini-cli not installed (npm install --prefix DIR @google/gemini-cli@0.61.0, "
    "then TOKENLEAN_GEMINI=DIR/node_modules/.bin/gemini)",
)
ERROR = "FAILED tests/test_x.py::test_y - AssertionError: 3 != 4"
LOG = "\n".join(
    [*(f"PASSED tests/test_mod{i}.py::test_case_{i} in 0.01s" for i in range(300)), ERROR]
)
ANSWER = "test_y fails: 3 != 4."
GENERATE = (":generateContent", ":streamGenerateContent")
COMMANDS = ["sh run_tests.sh", "sh run_tests.sh -k test_y"]  # one call per turn, then text


def _parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for c in body.get("contents", []) for p in c.get("parts", [])]


def scripted_model(request: Recorded) -> Reply:
    """Scores the task for the router; then calls the shell once per command, then answers."""
    if request.method != "POST" or not request.path.endswith(
        ("generateContent", "GenerateContent")
    ):
        return json_reply({"error": {"message": f"not served: {request.path}"}}, 404)
    body = request.json()
    if "Task Routing" in json.dumps(body.get("systemInstruction", "")):
        score = {"complexity_reasoning": "one command", "complexity_score": 10}
        return json_reply(gemini_response(json.dumps(score)))
    turn = sum("functionResponse" in p for p in _parts(body))
    reply = gemini_response(ANSWER)
    if "tools" in body and turn < len(COMMANDS):
        args = {"command": COMMANDS[turn], "description": "run the tests"}
        reply["candidates"][0]["content"]["parts"] = [
            {"functionCall": {"name": "run_shell_command", "args": args}}
        ]
    if request.path.endswith(":streamGenerateContent"):
        return sse_reply([sse_event(reply)])
    return json_reply(reply)


def _gemini_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, settings: bool) -> Path:
    """A temporary HOME (with or without the auth setting) and a project folder to run in."""
    assert GEMINI is not None
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    if settings:
        auth = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
        (home / ".gemini" / "settings.json").write_text(json.dumps(auth))
    for key in [k for k in os.environ if k.startswith(("GEMINI_", "GOOGLE_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    monkeypatch.setenv("GEMINI_CLI_TRUST_WORKSPACE", "true")
    monkeypatch.setenv("PATH", f"{Path(GEMINI).parent}{os.pathsep}{os.environ['PATH']}")
    project = tmp_path / "project"
    project.mkdir()
    (project / "test-output.log").write_text(LOG + "\n")
    (project / "run_tests.sh").write_text("cat test-output.log\n")
    monkeypatch.chdir(project)
    return project


def _response_text(body: dict[str, Any]) -> str:
    (response,) = [p["functionResponse"] for p in _parts(body) if "functionResponse" in p][-1:]
    return json.dumps(response["response"])


@needs_gemini
def test_tokenlean_wrap_gemini(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd):
    _gemini_env(tmp_path, monkeypatch, settings=True)
    originals = tmp_path / "originals"
    with FakeUpstream(script=scripted_model) as upstream:
        argv = ["wrap", "--upstream", upstream.url, "--originals", str(originals)]
        code = main([*argv, "gemini", "--yolo", "-p", "Run the tests and say what fails."])
    captured = capfd.readouterr()
    assert code == 0, captured.err[-3000:]
    assert ANSWER in captured.out
    turns = [r.json() for r in upstream.requests if r.path.endswith(":streamGenerateContent")]
    assert len(turns) == len(COMMANDS) + 1
    assert all(r.header("x-goog-api-key") == "test-key" for r in upstream.requests)
    for body in turns[1:]:  # each result: shortened at first sight, the error line kept
        result = _response_text(body)
        assert ERROR in result and len(result) < len(LOG) / 4
        assert str(originals) in result
    (original, *_) = originals.glob("*.txt")
    assert LOG in original.read_text()
    for before, after in itertools.pairwise(turns):  # what was sent once is re-sent as it was
        sent = [json.dumps(c) for c in before["contents"]]
        assert [json.dumps(c) for c in after["contents"]][: len(sent)] == sent
    scored = [r for r in upstream.requests if r.path.endswith(":generateContent")]
    assert len(scored) == 1  # the router's call
    assert "tokenlean: 4 requests in" in captured.err
    assert "3 tool results and 0 tool inputs shortened" in captured.err


@needs_gemini
def test_without_the_auth_setting_wrap_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
):
    _gemini_env(tmp_path, monkeypatch, settings=False)
    with FakeUpstream(script=scripted_model) as upstream:
        code = main(["wrap", "--upstream", upstream.url, "gemini", "-p", "hello"])
    assert code == 41
    assert upstream.requests == []
    assert '"selectedType": "gemini-api-key"' in capfd.readouterr().err


def test_the_hint_is_only_for_gemini_exit_41(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
):
    """Without the real CLI: a stand-in ``gemini`` that checks where it points and exits."""
    script = tmp_path / "gemini"
    script.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        "assert os.environ['GOOGLE_GEMINI_BASE_URL'].startswith('http://127.0.0.1:')\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with FakeUpstream() as upstream:
        assert main(["wrap", "--upstream", upstream.url, "gemini", "41"]) == 41
        assert "selectedType" in capfd.readouterr().err
        assert main(["wrap", "--upstream", upstream.url, "gemini", "3"]) == 3
        assert "selectedType" not in capfd.readouterr().err
