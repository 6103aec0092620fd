"""``tokenlean proxy`` and ``tokenlean wrap`` as a user runs them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tokenlean.cli import main
from tokenlean.testing.upstream import FakeUpstream

GENEROUS = 30.0

FAKE_AGENT = """#!{python}
import json, os, sys, urllib.request
base = os.environ[{variable!r}]
body = {{"model": "m", "max_tokens": 8, "messages": [{{"role": "user", "content": "hi"}}]}}
request = urllib.request.Request(
    base + {path!r}, data=json.dumps(body).encode(),
    headers={{"content-type": "application/json", "anthropic-version": "2023-06-01"}},
)
with urllib.request.urlopen(request, timeout=30) as reply:
    answer = json.load(reply)
with open({record!r}, "w") as f:
    json.dump({{"argv": sys.argv[1:], "base": base, "answer": answer}}, f)
sys.exit(3)
"""


def _install_fake_agent(folder: Path, name: str, variable: str, path: str) -> Path:
    record = folder / f"{name}.json"
    script = folder / name
    script.write_text(
        FAKE_AGENT.format(python=sys.executable, variable=variable, path=path, record=str(record))
    )
    script.chmod(0o755)
    return record


@pytest.mark.parametrize(
    ("agent", "variable", "path"),
    [
        ("claude", "ANTHROPIC_BASE_URL", "/v1/messages"),
        ("codex", "OPENAI_BASE_URL", "/chat/completions"),
    ],
)
def test_wrap_runs_the_agent_through_the_proxy(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    agent: str,
    variable: str,
    path: str,
):
    record = _install_fake_agent(tmp_path, agent, variable, path)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with FakeUpstream() as upstream:
        code = main(["wrap", "--upstream", upstream.url, agent, "-p", "do it", "--flag"])
    assert code == 3  # the agent's own exit code
    seen = json.loads(record.read_text())
    pointing = ["-c", f'openai_base_url="{seen["base"]}"'] if agent == "codex" else []
    assert seen["argv"] == [*pointing, "-p", "do it", "--flag"]
    assert seen["base"].startswith("http://127.0.0.1:")
    # The proxy's token, made for the run, travels as a base URL prefix the proxy takes off.
    prefix, token, *suffix = urlsplit(seen["base"]).path.strip("/").split("/")
    assert (prefix, suffix) == ("t", ["v1"] if agent == "codex" else [])
    assert len(token) >= 32
    assert token not in json.dumps([(r.path, r.headers) for r in upstream.requests])
    assert [r.path for r in upstream.requests] == [
        "/v1/messages" if agent == "claude" else "/v1/chat/completions"
    ]
    assert "tokenlean: 1 request in 1 session," in capsys.readouterr().err


def test_wrap_names_the_missing_agent(monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["wrap", "codex"]) == 127
    assert "npm install -g @openai/codex" in capsys.readouterr().err


def test_missing_extra_names_the_install_command():
    code = (
        "import sys; sys.modules['starlette'] = None\n"
        "from tokenlean.cli import main; sys.exit(main(['proxy']))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "pip install 'tokenlean[proxy]'" in run.stderr


def test_bad_upstream_is_a_usage_error(capsys: pytest.CaptureFixture[str]):
    assert main(["proxy", "--upstream", "api.anthropic.com"]) == 2
    assert "upstream must be an http(s) URL" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_proxy_command_logs_each_request_and_sums_up_when_stopped(stop: signal.Signals):
    port = _free_port()
    with FakeUpstream() as upstream:
        command = [
            sys.executable,
            "-m",
            "tokenlean.cli",
            "proxy",
            "--port",
            str(port),
            "--upstream",
            upstream.url,
        ]
        process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + GENEROUS
            while True:
                try:
                    reply = httpx.post(
                        url + "/v1/messages",
                        json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                        timeout=GENEROUS,
                    )
                    break
                except httpx.ConnectError:
                    assert time.monotonic() < deadline, "the proxy did not start"
                    time.sleep(0.1)
            assert reply.status_code == 200
            process.send_signal(stop)
            _, err = process.communicate(timeout=GENEROUS)
        finally:
            process.kill()
    assert process.returncode == 0
    assert "POST /v1/messages 200 session" in err
    assert "tokenlean: 1 request in 1 session," in err


def test_proxy_and_sdk_wrappers_keep_originals_in_one_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    from tokenlean.proxy import default_originals_dir
    from tokenlean.raw import RawSettings

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_originals_dir() == RawSettings().originals_dir
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # XDG: a relative path is invalid
    assert default_originals_dir() == RawSettings().originals_dir
    assert default_originals_dir().is_absolute()
