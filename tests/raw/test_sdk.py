"""The SDK wrappers, driven with the real ``anthropic`` and ``openai`` SDKs over real sockets.

A fake provider on 127.0.0.1 records every body; each test asserts the body that arrived is the
rewrite of what the caller passed (and everything else as the caller passed it), streamed and
not, sync and async.
"""

from __future__ import annotations

import builtins
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import tokenlean.anthropic
import tokenlean.openai
from tokenlean.raw import Api, RawSettings, rewrite_request
from tokenlean.raw import _sdk as sdk_module
from tokenlean.raw._sdk import plain_json
from tokenlean.raw.bodies import body, call_points, mark_newest, strip_cache_control

from .bodies import SCRIPT, anthropic_body, chat_body, responses_body
from .conftest import TEXT, Upstream, sample_trajectories

KEY = {"anthropic": "messages", "openai_chat": "messages", "openai_responses": "input"}


def _expected(api: Api, items: list[Any], settings: RawSettings) -> list[Any]:
    result = rewrite_request(api, {KEY[api]: plain_json(items)}, settings=settings)
    assert result is not None
    return list(result.body[KEY[api]])


def _anthropic_client(upstream: Upstream, settings: RawSettings, *, aio: bool = False) -> Any:
    cls = anthropic.AsyncAnthropic if aio else anthropic.Anthropic
    client = cls(api_key="test-key", base_url=upstream.url, max_retries=0)
    return tokenlean.anthropic.wrap(client, settings=settings)


def _openai_client(upstream: Upstream, settings: RawSettings, *, aio: bool = False) -> Any:
    cls = openai.AsyncOpenAI if aio else openai.OpenAI
    client = cls(api_key="test-key", base_url=f"{upstream.url}/v1", max_retries=0)
    return tokenlean.openai.wrap(client, settings=settings)


def _anthropic_kwargs() -> dict[str, Any]:
    raw = anthropic_body()
    return {
        "model": raw["model"],
        "max_tokens": raw["max_tokens"],
        "system": raw["system"],
        "tools": raw["tools"],
        "messages": raw["messages"],
        "thinking": raw["thinking"],
        "extra_body": {"context_management": raw["context_management"]},
    }


def _check_anthropic(upstream: Upstream, kwargs: dict[str, Any], settings: RawSettings) -> None:
    sent = upstream.bodies[-1]
    assert sent["messages"] == _expected("anthropic", kwargs["messages"], settings)
    assert sent["messages"] != kwargs["messages"]
    for key in ("model", "max_tokens", "system", "tools", "thinking"):
        assert sent[key] == kwargs[key]
    assert sent["context_management"] == kwargs["extra_body"]["context_management"]


def test_anthropic_create(upstream: Upstream, settings: RawSettings) -> None:
    client = _anthropic_client(upstream, settings)
    assert isinstance(client, anthropic.Anthropic)
    kwargs = _anthropic_kwargs()
    reply = client.messages.create(**kwargs)
    assert reply.content[0].text == TEXT
    _check_anthropic(upstream, kwargs, settings)
    assert "stream" not in upstream.bodies[-1]


def test_anthropic_streams(upstream: Upstream, settings: RawSettings) -> None:
    client = _anthropic_client(upstream, settings)
    kwargs = _anthropic_kwargs()
    events = list(client.messages.create(**kwargs, stream=True))
    assert events[-1].type == "message_stop" and upstream.bodies[-1]["stream"] is True
    _check_anthropic(upstream, kwargs, settings)
    with client.messages.stream(**kwargs) as stream:
        assert stream.get_final_text() == TEXT
    _check_anthropic(upstream, kwargs, settings)
    client.beta.messages.create(**kwargs)  # the beta resource is wrapped too
    _check_anthropic(upstream, kwargs, settings)
    client.with_options(timeout=5).messages.create(**kwargs)  # and so are copies
    _check_anthropic(upstream, kwargs, settings)
    assert len(upstream.bodies) == 4


async def test_anthropic_async(upstream: Upstream, settings: RawSettings) -> None:
    client = _anthropic_client(upstream, settings, aio=True)
    assert isinstance(client, anthropic.AsyncAnthropic)
    kwargs = _anthropic_kwargs()
    reply = await client.messages.create(**kwargs)
    assert reply.content[0].text == TEXT
    _check_anthropic(upstream, kwargs, settings)
    stream = await client.messages.create(**kwargs, stream=True)
    assert [e.type async for e in stream][-1] == "message_stop"
    _check_anthropic(upstream, kwargs, settings)
    async with client.messages.stream(**kwargs) as events:
        assert await events.get_final_text() == TEXT
    _check_anthropic(upstream, kwargs, settings)


def _chat_kwargs() -> dict[str, Any]:
    raw = chat_body()
    return {
        "model": raw["model"],
        "messages": raw["messages"],
        "tools": raw["tools"],
        "prompt_cache_key": raw["prompt_cache_key"],
    }


def _responses_kwargs() -> dict[str, Any]:
    raw = responses_body()
    return {
        "model": raw["model"],
        "input": raw["input"],
        "instructions": raw["instructions"],
        "tools": raw["tools"],
        "store": False,
    }


def _check_openai(
    upstream: Upstream, api: Api, kwargs: dict[str, Any], settings: RawSettings
) -> None:
    sent = upstream.bodies[-1]
    key = KEY[api]
    assert sent[key] == _expected(api, kwargs[key], settings) and sent[key] != kwargs[key]
    for name, value in kwargs.items():
        if name != key:
            assert sent[name] == value


def test_openai_chat(upstream: Upstream, settings: RawSettings) -> None:
    client = _openai_client(upstream, settings)
    assert isinstance(client, openai.OpenAI)
    kwargs = _chat_kwargs()
    assert client.chat.completions.create(**kwargs).choices[0].message.content == TEXT
    _check_openai(upstream, "openai_chat", kwargs, settings)
    chunks = list(client.chat.completions.create(**kwargs, stream=True))
    assert chunks[0].choices[0].delta.content == TEXT and upstream.bodies[-1]["stream"] is True
    _check_openai(upstream, "openai_chat", kwargs, settings)


def test_openai_responses(upstream: Upstream, settings: RawSettings) -> None:
    client = _openai_client(upstream, settings)
    kwargs = _responses_kwargs()
    assert client.responses.create(**kwargs).output_text == TEXT
    _check_openai(upstream, "openai_responses", kwargs, settings)
    events = list(client.responses.create(**kwargs, stream=True))
    assert events[-1].type == "response.completed"
    _check_openai(upstream, "openai_responses", kwargs, settings)
    with client.responses.stream(**kwargs) as stream:
        assert stream.get_final_response().output_text == TEXT
    _check_openai(upstream, "openai_responses", kwargs, settings)


async def test_openai_async(upstream: Upstream, settings: RawSettings) -> None:
    client = _openai_client(upstream, settings, aio=True)
    assert isinstance(client, openai.AsyncOpenAI)
    kwargs = _chat_kwargs()
    reply = await client.chat.completions.create(**kwargs)
    assert reply.choices[0].message.content == TEXT
    _check_openai(upstream, "openai_chat", kwargs, settings)
    stream = await client.chat.completions.create(**kwargs, stream=True)
    chunks = [c async for c in stream]
    assert chunks[0].choices[0].delta.content == TEXT
    _check_openai(upstream, "openai_chat", kwargs, settings)
    items = _responses_kwargs()
    assert (await client.responses.create(**items)).output_text == TEXT
    _check_openai(upstream, "openai_responses", items, settings)
    events = await client.responses.create(**items, stream=True)
    assert [e.type async for e in events][-1] == "response.completed"
    _check_openai(upstream, "openai_responses", items, settings)


def test_raw_response_views_are_wrapped(upstream: Upstream, settings: RawSettings) -> None:
    client = _anthropic_client(upstream, settings)
    kwargs = _anthropic_kwargs()
    assert client.messages.with_raw_response.create(**kwargs).status_code == 200
    _check_anthropic(upstream, kwargs, settings)
    assert client.with_raw_response.messages.create(**kwargs).parse().content[0].text == TEXT
    _check_anthropic(upstream, kwargs, settings)
    with client.messages.with_streaming_response.create(**kwargs) as response:
        assert response.status_code == 200
    _check_anthropic(upstream, kwargs, settings)


def test_the_core_stays_free_of_frameworks() -> None:
    import subprocess
    import sys

    heavy = "{'langchain', 'anthropic', 'openai'}"
    code = f"import sys, tokenlean.raw; print(sorted({heavy} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_sdk_models_in_history_are_sent_as_the_sdk_sends_them(
    upstream: Upstream, settings: RawSettings
) -> None:
    """An agent loop appends ``response.content`` (SDK models) to its history as is."""
    plain = _anthropic_kwargs()
    client = _anthropic_client(upstream, settings)
    client.messages.create(**plain)
    as_dicts = upstream.bodies[-1]["messages"]
    blocks = plain["messages"][1]["content"]
    models = [
        anthropic.types.ThinkingBlock(**blocks[0]),
        anthropic.types.TextBlock(**blocks[2]),
        anthropic.types.ToolUseBlock(**blocks[5]),
    ]
    with_models = dict(plain, messages=list(plain["messages"]))
    with_models["messages"][1] = {"role": "assistant", "content": models}
    plain["messages"][1] = {"role": "assistant", "content": [blocks[0], blocks[2], blocks[5]]}
    client.messages.create(**plain)
    client.messages.create(**with_models)
    assert upstream.bodies[-1]["messages"] == upstream.bodies[-2]["messages"]
    assert upstream.bodies[-1]["messages"][1]["content"][2]["input"]["command"] != SCRIPT
    assert as_dicts[2] == upstream.bodies[-1]["messages"][2]


def test_a_generator_of_messages(upstream: Upstream, settings: RawSettings) -> None:
    client = _anthropic_client(upstream, settings)
    kwargs = _anthropic_kwargs()
    client.messages.create(**{**kwargs, "messages": (m for m in kwargs["messages"])})
    _check_anthropic(upstream, kwargs, settings)


def test_a_failing_rewrite_sends_the_request_as_given(
    upstream: Upstream,
    settings: RawSettings,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(sdk_module, "rewrite_request", broken)
    client = _anthropic_client(upstream, settings)
    kwargs = _anthropic_kwargs()
    with caplog.at_level(logging.ERROR):
        assert client.messages.create(**kwargs).content[0].text == TEXT
    assert upstream.bodies[-1]["messages"] == kwargs["messages"]
    assert "sent unchanged" in caplog.text


def test_wrap_checks_its_client(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="client"):
        tokenlean.anthropic.wrap(object())
    with pytest.raises(ValueError, match="client"):
        tokenlean.openai.wrap(anthropic.Anthropic(api_key="k"))
    real_import = builtins.__import__

    def no_sdk(name: str, *args: Any, **kwargs: Any) -> Any:
        if name in ("anthropic", "openai"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sdk)
    with pytest.raises(ImportError, match=r"tokenlean\[anthropic\]"):
        tokenlean.anthropic.wrap(object())
    with pytest.raises(ImportError, match=r"tokenlean\[openai\]"):
        tokenlean.openai.wrap(object())


RUNS = sample_trajectories(per_source=1, min_calls=4)[:2]
MAX_TURNS = 30  # enough turns to show drift; the full runs are covered without sockets
SEND: dict[Api, Callable[[Any, list[Any], bool], None]] = {
    "anthropic": lambda c, items, s: _drain(
        c.messages.create(model="m", max_tokens=10, messages=items, stream=s)
    ),
    "openai_chat": lambda c, items, s: _drain(
        c.chat.completions.create(model="m", messages=items, stream=s)
    ),
    "openai_responses": lambda c, items, s: _drain(
        c.responses.create(model="m", input=items, stream=s)
    ),
}


def _drain(reply: Any) -> None:
    if isinstance(reply, (anthropic.Stream, openai.Stream)):
        list(reply)


@pytest.mark.skipif(not RUNS, reason="needs ../shared/data/trajectories")
@pytest.mark.parametrize("api", list(SEND))
def test_real_conversations_reach_upstream_without_drift(
    api: Api, upstream: Upstream, tmp_path: Path
) -> None:
    settings = RawSettings(originals_dir=tmp_path)
    anthropic_client = _anthropic_client(upstream, settings)
    openai_client = _openai_client(upstream, settings)
    client = anthropic_client if api == "anthropic" else openai_client
    for run in RUNS:
        upstream.requests.clear()
        requests = []
        for n, k in enumerate(call_points(run.messages)[:MAX_TURNS]):
            request = mark_newest(api, body(api, run.messages[:k]))
            requests.append(request)
            SEND[api](client, request[KEY[api]], n % 2 == 1)  # streamed every other turn
        sent = [[json.dumps(strip_cache_control(i)) for i in b[KEY[api]]] for b in upstream.bodies]
        assert len(sent) == len(requests)
        for k in range(1, len(sent)):
            assert sent[k][: len(sent[k - 1])] == sent[k - 1]
        expected = rewrite_request(api, requests[-1], settings=settings)
        last = expected.body[KEY[api]] if expected is not None else requests[-1][KEY[api]]
        assert upstream.bodies[-1][KEY[api]] == last
