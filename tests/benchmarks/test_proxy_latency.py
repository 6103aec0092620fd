"""benchmarks.proxy_latency: the history re-sent is the same session in each API's shape, and
each API's requests go to its own path."""

from __future__ import annotations

import pytest
from benchmarks.proxy_latency import ROUTES, SHARED, history_body

from tests.data import needs_shared
from tokenlean.raw import Api, list_key
from tokenlean.tokens import TiktokenCounter


@needs_shared
@pytest.mark.parametrize("api", ["anthropic", "openai_chat", "openai_responses"])
def test_the_history_reaches_its_tokens_in_the_apis_shape(api: Api):
    counter = TiktokenCounter("o200k_base", vocab_path=SHARED / "tokenizers")
    body, tokens = history_body(5_000, counter, api)
    assert 5_000 <= tokens < 40_000
    items = body[list_key(api)]
    assert isinstance(items, list) and len(items) > 4
    assert ROUTES[api][0].startswith(
        {"anthropic": "/v1/messages", "openai_chat": "/v1/chat"}.get(api, "/v1/responses")
    )
    if api == "openai_responses":
        assert any(item.get("type") == "function_call_output" for item in items)
