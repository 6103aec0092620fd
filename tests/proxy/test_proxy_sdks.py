"""The real SDKs, streamed and not, through the proxy to a recording fake provider."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest

from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import MARKER, ProxyFactory, marker_rewriter

ANSWER = "Hello from the fake upstream"


def _anthropic(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=url, api_key="sk-ant-test", max_retries=0, default_headers={"x-extra": "kept"}
    )


def _openai(url: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=url + "/v1", api_key="sk-test", organization="org-test", max_retries=0
    )


MESSAGES: list[Any] = [
    {"role": "user", "content": f"run the tests {MARKER}"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "pytest"}}],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": f"1 failed {MARKER}",
                "cache_control": {"type": "ephemeral"},
            }
        ],
    },
]


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages(make_proxy: ProxyFactory, upstream: FakeUpstream, stream: bool):
    proxy = make_proxy(rewriter=marker_rewriter())
    client = _anthropic(proxy.url)
    kwargs: dict[str, Any] = {"model": "claude-test", "max_tokens": 64, "messages": MESSAGES}
    extra = {"extra_query": {"beta": "true"}, "extra_headers": {"anthropic-beta": "b-2025"}}
    if stream:
        with client.messages.stream(**kwargs, **extra) as s:
            text = s.get_final_text()
    else:
        text = client.messages.create(**kwargs, **extra).content[0].text  # type: ignore[union-attr]
    assert text == ANSWER
    (sent,) = upstream.requests
    assert (sent.path, sent.query) == ("/v1/messages", "beta=true")
    # The key travels as the SDK put it (x-api-key, or a bearer token in newer SDKs).
    assert "sk-ant-test" in (sent.header("x-api-key") or sent.header("authorization") or "")
    assert sent.header("anthropic-beta") == "b-2025"
    assert sent.header("anthropic-version")
    assert sent.header("x-extra") == "kept"
    body = sent.json()
    assert body.get("stream", False) is stream
    assert MARKER not in json.dumps(body)  # the rewrite reached the provider ...
    expected = json.loads(json.dumps(MESSAGES).replace(MARKER, MARKER.upper()))
    assert body["messages"] == expected  # ... and changed nothing else
    assert body["messages"][2]["content"][0]["cache_control"] == {"type": "ephemeral"}


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat(make_proxy: ProxyFactory, upstream: FakeUpstream, stream: bool):
    proxy = make_proxy(rewriter=marker_rewriter())
    client = _openai(proxy.url)
    messages: Any = [
        {"role": "user", "content": "list files"},
        {"role": "tool", "tool_call_id": "c1", "content": f"a.py {MARKER}"},
    ]
    if stream:
        chunks = client.chat.completions.create(model="gpt-test", messages=messages, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        reply = client.chat.completions.create(model="gpt-test", messages=messages)
        text = reply.choices[0].message.content or ""
    assert text.strip() == ANSWER
    (sent,) = upstream.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.header("authorization") == "Bearer sk-test"
    assert sent.header("openai-organization") == "org-test"
    assert sent.json()["messages"][1]["content"] == f"a.py {MARKER.upper()}"


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses(make_proxy: ProxyFactory, upstream: FakeUpstream, stream: bool):
    proxy = make_proxy(rewriter=marker_rewriter())
    client = _openai(proxy.url)
    items: Any = [
        {"role": "user", "content": "list files"},
        {"type": "function_call_output", "call_id": "c1", "output": f"a.py {MARKER}"},
    ]
    if stream:
        events = list(client.responses.create(model="gpt-test", input=items, stream=True))
        assert events[-1].type == "response.completed"
        text = events[-1].response.output_text  # type: ignore[union-attr]
    else:
        text = client.responses.create(model="gpt-test", input=items).output_text
    assert text == ANSWER
    (sent,) = upstream.requests
    assert sent.path == "/v1/responses"
    assert sent.json()["input"][1]["output"] == f"a.py {MARKER.upper()}"


def test_count_tokens_passes_through(make_proxy: ProxyFactory, upstream: FakeUpstream):
    calls: list[str] = []
    proxy = make_proxy(rewriter=marker_rewriter(calls))
    count = _anthropic(proxy.url).messages.count_tokens(model="claude-test", messages=MESSAGES)
    assert count.input_tokens == 42
    (sent,) = upstream.requests
    assert sent.path == "/v1/messages/count_tokens"
    assert MARKER in sent.body.decode()
    assert calls == []


def test_async_clients_stream(make_proxy: ProxyFactory, upstream: FakeUpstream):
    import asyncio

    proxy = make_proxy(rewriter=marker_rewriter())

    async def both() -> tuple[str, str]:
        a = anthropic.AsyncAnthropic(base_url=proxy.url, api_key="k", max_retries=0)
        o = openai.AsyncOpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
        async with a.messages.stream(
            model="claude-test", max_tokens=8, messages=MESSAGES
        ) as stream:
            first = await stream.get_final_text()
        chunks = await o.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        second = "".join([c.choices[0].delta.content or "" async for c in chunks if c.choices])
        return first, second.strip()

    assert asyncio.run(both()) == (ANSWER, ANSWER)
    assert [r.path for r in upstream.requests] == ["/v1/messages", "/v1/chat/completions"]
