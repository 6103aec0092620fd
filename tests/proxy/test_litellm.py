"""The LiteLLM plug-in in a real LiteLLM proxy on 127.0.0.1, in front of the fake provider,
driven by the real openai SDK.

LiteLLM is heavy and pins older rich and websockets, so it lives in its own environment: ``make
.venv-litellm/.installed`` (what ``.ci/run`` does), then ``TOKENLEAN_LITELLM=.venv-litellm/bin/
litellm``; a ``litellm`` on the test environment's own path is used too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from tests.data import CHAT_HISTORY, CHAT_TOOLS, ERROR, LOG
from tokenlean.testing.upstream import FakeUpstream

from .litellm_gateway import NEEDS_LITELLM, Gateway, start_gateway, wait_until_up

pytestmark = NEEDS_LITELLM

#: A custom callback module the config names: originals go to a "folder" that is a file, so
#: every rewrite fails inside tokenlean, and the call must go on as the client sent it.
FAILING_CALLBACK = """
from pathlib import Path

from tokenlean.proxy.litellm import TokenleanCallback
from tokenlean.raw import RawSettings

handler = TokenleanCallback(settings=RawSettings(originals_dir=Path(__file__).with_name("file")))
"""


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
        files = {"custom_callbacks.py": FAILING_CALLBACK, "file": "not a folder"}
        started = {
            name: start_gateway(root / name, upstream, callback, files=files)
            for (name, callback), upstream in zip(callbacks.items(), (first, second), strict=True)
        }
        try:
            for process, gateway in started.values():
                wait_until_up(process, gateway)
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
