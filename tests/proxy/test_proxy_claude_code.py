"""End to end with the real Claude Code CLI: ``claude -p`` through the proxy to a scripted fake
Anthropic model that asks for two Bash commands and then answers.

Each test runs once per build present (:mod:`tests.proxy.agent_clis`): the pinned one and the
current release; a build not installed is skipped, saying how to install it. Install them outside
the repository; offline use needs no account (a dummy key and the fake upstream stand in)::

    npm install --prefix ~/cc @anthropic-ai/claude-code@2.1.197
    export TOKENLEAN_CLAUDE=~/cc/node_modules/.bin/claude     # or put `claude` on PATH
    npm install --prefix ~/cc-current @anthropic-ai/claude-code@latest
    export TOKENLEAN_CLAUDE_CURRENT=~/cc-current/node_modules/.bin/claude

What Claude Code 2.1.197 sends (recorded by this test): ``POST /v1/messages?beta=true``, streamed,
with ``x-api-key``, ``anthropic-version``, a long ``anthropic-beta`` list and an
``x-claude-code-session-id`` header; a body with 24 tools (~64 KB of schemas), a ``system`` list
with ``cache_control``, ``thinking: {"type": "adaptive"}``, ``context_management`` (clear
thinking), ``output_config`` (effort), ``metadata.user_id`` (a JSON string holding the session
id), a message with ``role: "system"`` inside ``messages``, and ``cache_control`` on the last
block of the newest message only. Tool results arrive as strings; consecutive tool_use blocks
of one assistant message share that message's id.

Claude Code 2.1.332 sends the same, except that its ``role: "system"`` message, a list of one
text block in its first request, is that text as a plain string from the second request on (its
own drift: it happens without the proxy too). The prefix test compares what the proxy forwarded
with what the client sent, so that change passes and any the proxy made does not.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tokenlean.proxy import BackgroundProxy, ProxySettings, create_app
from tokenlean.testing.upstream import (
    FakeUpstream,
    Recorded,
    Reply,
    anthropic_events,
    anthropic_message,
    json_reply,
    sse_reply,
)

from .agent_clis import cli_params, pinned
from .proxy_support import recording_rewriter

CLAUDES = cli_params("claude", "TOKENLEAN_CLAUDE", "@anthropic-ai/claude-code")
CLAUDE = pinned("claude", "TOKENLEAN_CLAUDE")  # the build the recipe tests drive
HAS_REWRITE = importlib.util.find_spec("tokenlean.raw") is not None

#: About 20 KB of near-identical lines with the one line the model needs near the end (Claude
#: Code itself replaces Bash output over ~30 KB with a preview, so this size reaches the model).
NEEDLE = "ERROR worker-217: disk quota exceeded on /var/data"
LONG_COMMAND = (
    'for i in $(seq 1 300); do echo "2025-01-01 12:00:$((i % 60)) INFO worker-$i processed '
    f"batch $i in 12ms status=ok\"; done; echo '{NEEDLE}'"
)
SHORT_COMMAND = "echo second-step-done"
FINAL = "worker-217 ran out of disk quota."
PROMPT = "Look at the worker log and tell me which worker failed."
T = TypeVar("T")


def _tool_results(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        block
        for message in body["messages"]
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, Mapping) and block.get("type") == "tool_result"
    ]


def _text(result: Mapping[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, Mapping))


def scripted_model(request: Recorded) -> Reply:
    """Bash, Bash, then an answer; any side request (no Bash tool) gets a short text."""
    if request.path == "/v1/messages/count_tokens":
        return json_reply({"input_tokens": 1000})
    if request.path != "/v1/messages":
        return json_reply({"type": "error", "error": {"type": "not_found_error"}}, 404)
    body = request.json()
    done = len(_tool_results(body))
    if all(t.get("name") != "Bash" for t in body.get("tools", [])):
        blocks: list[dict[str, Any]] = [{"type": "text", "text": "ok"}]
    elif done < 2:
        command = LONG_COMMAND if done == 0 else SHORT_COMMAND
        blocks = [
            {
                "type": "tool_use",
                "id": f"toolu_{done}",
                "name": "Bash",
                "input": {"command": command, "description": "inspect the workers"},
            }
        ]
    else:
        blocks = [{"type": "text", "text": FINAL}]
    stop = "tool_use" if blocks[0]["type"] == "tool_use" else "end_turn"
    message_id = f"msg_{request.body.__hash__() & 0xFFFFFF:06x}"  # one id per answer
    if body.get("stream"):
        return sse_reply(anthropic_events(blocks, stop, message_id=message_id))
    message = {
        **anthropic_message("", message_id=message_id),
        "content": blocks,
        "stop_reason": stop,
    }
    return json_reply(message)


def claude_env(home: Path, base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
    env.update(
        HOME=str(home),
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY="sk-ant-dummy",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    return env


def run_claude(claude: str, cwd: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    command = [claude, "-p", PROMPT, "--allowedTools", "Bash"]
    return subprocess.run(
        command, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=300
    )


@dataclass
class Session:
    run: subprocess.CompletedProcess[str]
    client_bodies: list[dict[str, Any]]  # as Claude Code sent them to the proxy
    upstream: list[Recorded]  # as the proxy forwarded them

    def conversation(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(client body, upstream body) of each main-conversation request, in order."""
        sent = [r.json() for r in self.upstream if r.path == "/v1/messages"]
        pairs = list(zip(self.client_bodies, sent, strict=True))
        return [(c, u) for c, u in pairs if any(t.get("name") == "Bash" for t in c["tools"])]


def through_proxy(
    root: Path, client: Callable[[Mapping[str, str]], T]
) -> tuple[T, list[dict[str, Any]], list[Recorded]]:
    """Run ``client`` (given Claude Code's environment, pointed at the proxy) against the
    scripted model: what it returned, the bodies it sent the proxy, and what was forwarded."""
    (root / "home").mkdir()
    (root / "work").mkdir()
    recording, client_bodies = recording_rewriter(root / "originals")

    with FakeUpstream(script=scripted_model) as upstream:
        app = create_app(ProxySettings(upstream=upstream.url), rewriter=recording)
        with BackgroundProxy(app) as proxy:
            result = client(claude_env(root / "home", proxy.url))
    return result, client_bodies, list(upstream.requests)


@pytest.fixture(scope="module", params=CLAUDES)
def claude(request: pytest.FixtureRequest) -> str:
    """The Claude Code executable: the pinned build, then the current release."""
    path: str = request.param
    return path


@pytest.fixture(scope="module")
def session(claude: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    root = tmp_path_factory.mktemp("claude-code")
    run, client_bodies, upstream = through_proxy(
        root, lambda env: run_claude(claude, root / "work", env)
    )
    yield Session(run, client_bodies, upstream)


def test_claude_code_completes_through_the_proxy(session: Session):
    assert session.run.returncode == 0, session.run.stderr
    assert FINAL in session.run.stdout
    conversation = session.conversation()
    assert len(conversation) == 3
    last_client, _ = conversation[-1]
    results = [_text(r) for r in _tool_results(last_client)]
    assert NEEDLE in results[0]  # Claude Code really ran the commands
    assert "second-step-done" in results[1]


def test_what_claude_code_sends(session: Session):
    first = next(r for r in session.upstream if r.path == "/v1/messages")
    assert first.query == "beta=true"
    for header in ("x-api-key", "anthropic-version", "anthropic-beta"):
        assert first.header(header), header
    for client, _ in session.conversation():
        assert client["stream"] is True
        assert any(t["name"] == "Bash" for t in client["tools"])
        blocks = [
            b for m in client["messages"] if isinstance(m["content"], list) for b in m["content"]
        ]
        marked = [i for i, b in enumerate(blocks) if "cache_control" in b]
        # The breakpoint moves: only the newest block carries it (the system-role message that
        # may follow holds a plain string).
        assert marked == [len(blocks) - 1]
    assert any(m["role"] == "system" for m in client["messages"])


def test_everything_but_tool_results_reaches_the_model_unchanged(session: Session):
    for client, sent in session.conversation():
        assert {k: v for k, v in client.items() if k != "messages"} == {
            k: v for k, v in sent.items() if k != "messages"
        }
        assert len(client["messages"]) == len(sent["messages"])
        for before, after in zip(client["messages"], sent["messages"], strict=True):
            if not _tool_results({"messages": [before]}):
                assert before == after


def _strip_cache_control(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache_control(v) for v in value]
    return value


def _system_text_as_string(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Claude Code's own drift (2.1.332): its system-role message, sent first as a list of text
    blocks, is the same text as one string in the next requests."""
    blocks = before["content"]
    return (
        before["role"] == after["role"] == "system"
        and isinstance(blocks, list)
        and isinstance(after["content"], str)
        and all(b.get("type") == "text" for b in blocks)
        and "".join(b["text"] for b in blocks) == after["content"]
    )


def test_zero_prefix_drift_upstream(session: Session):
    """What the model was sent before it is sent again byte for byte wherever the client kept
    it; where the client itself changed an earlier message (only the known drift), the model gets
    the client's new message as the client sent it."""
    pairs = [tuple(map(_strip_cache_control, pair)) for pair in session.conversation()]
    for (client_before, before), (client_after, after) in itertools.pairwise(pairs):
        assert (after["system"], after["tools"]) == (before["system"], before["tools"])
        for i, kept in enumerate(client_before["messages"]):
            if client_after["messages"][i] == kept:
                assert after["messages"][i] == before["messages"][i], i
            else:
                assert _system_text_as_string(kept, client_after["messages"][i]), i
                assert after["messages"][i] == client_after["messages"][i], i


@pytest.mark.skipif(not HAS_REWRITE, reason="needs the request rewrite (tokenlean.raw)")
def test_the_long_result_is_shortened_keeping_the_line_the_model_needs(session: Session):
    _, sent = session.conversation()[1]
    client, _ = session.conversation()[1]
    original = _text(_tool_results(client)[0])
    shortened = _text(_tool_results(sent)[0])
    assert len(original) > 15_000
    assert len(shortened) < len(original) / 2
    assert NEEDLE in shortened


def test_tokenlean_wrap_claude(claude: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd):
    """The same run through ``tokenlean wrap claude``, as a user starts it."""
    from tokenlean.cli import main

    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    env = claude_env(tmp_path / "home", "unused")
    for key in [k for k in os.environ if k.startswith(("ANTHROPIC_", "CLAUDE"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PATH", f"{Path(claude).parent}{os.pathsep}{os.environ['PATH']}")
    with FakeUpstream(script=scripted_model) as upstream:
        code = main(
            [
                "wrap",
                "--upstream",
                upstream.url,
                "--originals",
                str(tmp_path / "o"),
                "claude",
                "-p",
                PROMPT,
                "--allowedTools",
                "Bash",
            ]
        )
    captured = capfd.readouterr()  # the agent writes to the real stdout
    assert code == 0
    assert FINAL in captured.out
    assert "tokenlean: 3 requests in 1 session," in captured.err
