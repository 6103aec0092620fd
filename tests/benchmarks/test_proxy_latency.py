"""benchmarks.proxy_latency: the history re-sent is the same session in each API's shape, and
each API's requests go to a path the proxy reads as that API's."""

from __future__ import annotations

import json

import pytest
from benchmarks.proxy_latency import ROUTES, SHARED, _alike, history_body, real_tools

from tests.data import needs_shared
from tokenlean.proxy._routing import api_for
from tokenlean.raw import Api, list_key
from tokenlean.tokens import TiktokenCounter


@needs_shared
@pytest.mark.parametrize("api", ["anthropic", "openai_chat", "openai_responses", "gemini"])
def test_the_history_reaches_its_tokens_in_the_apis_shape(api: Api):
    counter = TiktokenCounter("o200k_base", vocab_path=SHARED / "tokenizers")
    body, tokens = history_body(5_000, counter, api)
    assert 5_000 <= tokens < 40_000
    items = body[list_key(api)]
    assert isinstance(items, list) and len(items) > 4
    path = ROUTES[api][0].split("?")[0]
    assert api_for("POST", path) == api  # the proxy reads it as that API's request
    if api == "openai_responses":
        assert any(item.get("type") == "function_call_output" for item in items)


@needs_shared
@pytest.mark.parametrize("api", ["anthropic", "openai_chat", "openai_responses", "gemini"])
def test_the_real_tools_are_in_the_apis_shape(api: Api):
    tools = real_tools(api)
    assert 15_000 < len(json.dumps(tools)) < 40_000
    declared = [d for t in tools for d in t.get("functionDeclarations", [])]
    named = [t.get("function", t) for t in tools] if api != "gemini" else declared
    assert len(named) == 15 and all(isinstance(t["name"], str) for t in named)
    schema = {"anthropic": "input_schema"}.get(api, "parameters")
    assert all(isinstance(t[schema], dict) for t in named)


@needs_shared
@pytest.mark.parametrize("api", ["anthropic", "openai_chat", "openai_responses", "gemini"])
def test_conversations_alike_open_with_the_first_message_and_differ_in_the_second(api: Api):
    counter = TiktokenCounter("o200k_base", vocab_path=SHARED / "tokenizers")
    body, _ = history_body(5_000, counter, api)
    kept = json.dumps(body)
    first, other = _alike(body, api, 0), _alike(body, api, 1)
    assert first is body and json.dumps(body) == kept  # the history itself, not changed
    items, others = first[list_key(api)], other[list_key(api)]
    assert items[0] == others[0] and items[1] != others[1] and items[2:] == others[2:]
    assert "(conversation 1)" in json.dumps(others[1])
