"""End to end with the real Codex CLI: ``tokenlean wrap codex exec ...`` against a fake OpenAI
Responses upstream. Skipped unless Codex is installed::

    npm install --prefix ~/codex @openai/codex
    export TOKENLEAN_CODEX=~/codex/node_modules/.bin/codex     # or put `codex` on PATH

Codex 0.171 ignores ``OPENAI_BASE_URL``; ``tokenlean wrap`` passes ``-c openai_base_url=...``.
It first tries a WebSocket to ``/v1/responses`` (the proxy refuses it), retries five times, then
falls back to a streamed ``POST /v1/responses``: a run takes some seconds longer than it should.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tokenlean.cli import main
from tokenlean.testing.upstream import (
    FakeUpstream,
    Recorded,
    Reply,
    json_reply,
    response_object,
    sse_event,
    sse_reply,
)

CODEX = os.environ.get("TOKENLEAN_CODEX") or shutil.which("codex")
pytestmark = pytest.mark.skipif(
    CODEX is None or not Path(CODEX).exists(),
    reason="Codex not installed (npm install --prefix DIR @openai/codex, "
    "then TOKENLEAN_CODEX=DIR/node_modules/.bin/codex)",
)
ANSWER = "Nothing to change here."


def scripted_model(request: Recorded) -> Reply:
    if request.method != "POST" or not request.path.endswith("/responses"):
        return json_reply({"error": {"message": f"not served: {request.path}"}}, 404)
    done = response_object(ANSWER)
    created = {**done, "status": "in_progress", "output": []}
    item = {"type": "response.output_item.done", "output_index": 0, "item": done["output"][0]}
    return sse_reply(
        [
            sse_event({"type": "response.created", "response": created}, "response.created"),
            sse_event(item, "response.output_item.done"),
            sse_event({"type": "response.completed", "response": done}, "response.completed"),
        ]
    )


def test_tokenlean_wrap_codex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd):
    assert CODEX is not None
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    for key in [k for k in os.environ if k.startswith(("OPENAI_", "CODEX_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy")
    monkeypatch.setenv("PATH", f"{Path(CODEX).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    with FakeUpstream(script=scripted_model) as upstream:
        code = main(
            [
                "wrap",
                "--upstream",
                upstream.url,
                "codex",
                "exec",
                "--skip-git-repo-check",
                "Is there anything to change?",
            ]
        )
    captured = capfd.readouterr()
    assert code == 0, captured.err[-2000:]
    assert ANSWER in captured.out
    posts = [r for r in upstream.requests if r.method == "POST"]
    assert posts and all(r.path == "/v1/responses" for r in posts)
    body = posts[0].json()
    assert body["stream"] is True
    assert isinstance(body["input"], list)
    assert "tokenlean: 1 requests in 1 sessions" in captured.err
