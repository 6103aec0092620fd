"""The LiteLLM plug-in in a real LiteLLM proxy on 127.0.0.1, in front of the fake provider,
driven by the real openai SDK.

LiteLLM is heavy and pins older rich and websockets, so it lives in its own environment: ``make
.venv-litellm/.installed`` (what ``.ci/run`` does), then ``TOKENLEAN_LITELLM=.venv-litellm/bin/
litellm``; a ``litellm`` on the test environment's own path is used too.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.data import CHAT_HISTORY, CHAT_TOOLS, ERROR, LOG
from tokenlean.testing.upstream import FakeUpstream, Recorded

from .proxy_support import free_port

LITELLM = os.environ.get("TOKENLEAN_LITELLM") or shutil.which(
    "litellm", path=str(Path(sys.executable).parent)
)
pytestmark = pytest.mark.skipif(
    LITELLM is None or not Path(LITELLM).exists(),
    reason="the LiteLLM proxy is not installed (make .venv-litellm/.installed, then "
    "TOKENLEAN_LITELLM=.venv-litellm/bin/litellm)",
)
STARTUP = 180.0  # LiteLLM imports a lot: tens of seconds on a busy two-core machine

#: A custom callback module the config names: originals go to a "folder" that is a file, so
#: every rewrite fails inside tokenlean, and the call must go on as the client sent it.
FAILING_CALLBACK = """
from pathlib import Path

from tokenlean.proxy.litellm import TokenleanCallback
from tokenlean.raw import RawSettings

handler = TokenleanCallback(settings=RawSettings(originals_dir=Path(__file__).with_name("file")))
"""


@dataclass
class Gateway:
    """A running LiteLLM proxy, the fake provider behind it and where its originals go."""

    url: str
    key: str
    upstream: FakeUpstream
    cache: Path

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url + "/v1", api_key=self.key, max_retries=0)

    def chats(self) -> list[Recorded]:
        return [r for r in self.upstream.requests if r.path == "/v1/chat/completions"]


def _config(upstream: FakeUpstream, key: str, callback: str) -> str:
    return (
        "model_list:\n"
        "  - model_name: gpt-test\n"
        "    litellm_params:\n"
        "      model: openai/gpt-test\n"
        f"      api_base: {upstream.url}/v1\n"
        "      api_key: sk-upstream\n"
        f"litellm_settings:\n  callbacks: {callback}\n"
        f"general_settings:\n  master_key: {key}\n"
    )


def _start(
    folder: Path, upstream: FakeUpstream, callback: str
) -> tuple[subprocess.Popen[bytes], Gateway]:
    folder.mkdir()
    key = "sk-" + secrets.token_urlsafe(32)
    config = folder / "config.yaml"
    config.write_text(_config(upstream, key, callback))
    (folder / "custom_callbacks.py").write_text(FAILING_CALLBACK)
    (folder / "file").write_text("not a folder")
    port = free_port()
    env = {**os.environ, "XDG_CACHE_HOME": str(folder / "cache")}
    command = [str(LITELLM), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    log = (folder / "litellm.log").open("wb")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    return process, Gateway(f"http://127.0.0.1:{port}", key, upstream, folder / "cache")


def _wait_until_up(process: subprocess.Popen[bytes], gateway: Gateway, log: Path) -> None:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(gateway.url + "/health/liveliness", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"LiteLLM did not start:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture(scope="module")
def gateways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Gateway]]:
    """Two LiteLLM proxies, started side by side: one with the plug-in as the docs configure
    it, one whose tokenlean rewrite always fails."""
    root = tmp_path_factory.mktemp("litellm")
    callbacks = {
        "tokenlean": "tokenlean.proxy.litellm.callback",
        "failing": "custom_callbacks.handler",
    }
    with FakeUpstream() as first, FakeUpstream() as second:
        started = {
            name: _start(root / name, upstream, callback)
            for (name, callback), upstream in zip(callbacks.items(), (first, second), strict=True)
        }
        try:
            for name, (process, gateway) in started.items():
                _wait_until_up(process, gateway, root / name / "litellm.log")
            yield {name: gateway for name, (_, gateway) in started.items()}
        finally:
            for process, _ in started.values():
                process.terminate()
                process.wait(60)


def _ask(client: openai.OpenAI, messages: Any, *, stream: bool = False) -> str:
    if stream:
        chunks = client.chat.completions.create(
            model="gpt-test", messages=messages, tools=CHAT_TOOLS, stream=True
        )
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    reply = client.chat.completions.create(model="gpt-test", messages=messages, tools=CHAT_TOOLS)
    return reply.choices[0].message.content or ""


def _messages_prefix(body: bytes) -> str:
    """A request body as sent, up to the end of its last message: what the next call of the
    conversation re-sends, so what must come back byte for byte for the prompt cache to hit."""
    text = body.decode()
    start = re.search(r'"messages"\s*:\s*', text)
    assert start is not None, text[:200]
    _, end = json.JSONDecoder().raw_decode(text, start.end())
    return text[: end - 1]  # without the closing bracket: the next call adds messages there


def test_the_provider_gets_the_shortened_output_and_then_the_same_bytes(
    gateways: dict[str, Gateway],
):
    gateway = gateways["tokenlean"]
    client = gateway.client()
    before = len(gateway.chats())
    assert _ask(client, CHAT_HISTORY).strip() == "Hello from the fake upstream"
    later = [
        *CHAT_HISTORY,
        {"role": "assistant", "content": "1 failed"},
        {"role": "user", "content": "fix it"},
    ]
    _ask(client, later)
    first, second = gateway.chats()[before:]
    sent = first.json()["messages"][2]["content"]
    assert ERROR in sent  # the failure the agent needs is kept ...
    assert len(sent) < len(LOG) // 5  # ... and the 400 passing lines are not
    (kept,) = set(re.findall(r"full output: (\S+\.txt)", sent))
    assert Path(kept).is_relative_to(gateway.cache)  # in the default folder, as configured
    assert Path(kept).read_text() == LOG  # the marker names the original, whole
    assert first.json()["tools"] == CHAT_TOOLS  # the rest of the call is as the client sent it
    # The second call re-sends the history: the provider gets the first call's bytes again.
    prefix = _messages_prefix(first.body)
    assert second.body.decode().startswith(prefix + ",")
    assert second.json()["messages"][2]["content"] == sent


def test_streamed_calls_are_rewritten_too(gateways: dict[str, Gateway]):
    gateway = gateways["tokenlean"]
    before = len(gateway.chats())
    assert (
        _ask(gateway.client(), CHAT_HISTORY, stream=True).strip() == "Hello from the fake upstream"
    )
    (sent,) = gateway.chats()[before:]
    assert sent.json()["stream"] is True
    content = sent.json()["messages"][2]["content"]
    assert ERROR in content and len(content) < len(LOG) // 5


def _anthropic_messages(gateway: Gateway) -> None:
    client = anthropic.Anthropic(base_url=gateway.url, api_key=gateway.key, max_retries=0)
    use = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "pytest"}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": LOG}
    messages: Any = [
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    client.messages.create(model="gpt-test", max_tokens=64, messages=messages)


def _responses(gateway: Gateway) -> None:
    items: Any = [
        {"type": "message", "role": "user", "content": "run the tests"},
        {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": LOG},
    ]
    gateway.client().responses.create(model="gpt-test", input=items)


@pytest.mark.parametrize("call", [_anthropic_messages, _responses])
def test_messages_and_responses_calls_are_rewritten(gateways: dict[str, Gateway], call: Any):
    """``/v1/messages`` and ``/v1/responses`` hand the hook their own shapes (LiteLLM then
    translates them for the model's provider: here, the Responses API)."""
    gateway = gateways["tokenlean"]
    before = len(gateway.upstream.requests)
    call(gateway)
    (sent,) = [r for r in gateway.upstream.requests[before:] if r.method == "POST"]
    text = sent.body.decode()
    assert ERROR in text and "similar lines omitted" in text
    assert "test_case_150 " not in text  # the passing lines were cut before LiteLLM sent it


def test_a_failing_rewrite_sends_the_call_unchanged(gateways: dict[str, Gateway]):
    gateway = gateways["failing"]
    before = len(gateway.chats())
    assert _ask(gateway.client(), CHAT_HISTORY).strip() == "Hello from the fake upstream"
    (sent,) = gateway.chats()[before:]
    assert sent.json()["messages"][2]["content"] == LOG
