"""``GET /metrics``: the proxy's figures in the Prometheus text format, read over a socket after
real requests went through the real app (rewritten, and answered with an error)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.data import LOG
from tokenlean.proxy import BackgroundProxy
from tokenlean.testing.upstream import FakeUpstream, json_reply

from .proxy_support import ProxyFactory, wait_for

#: One sample line of the text format: a name, optional labels, a value.
_SAMPLE = re.compile(r'([a-z_]+)(?:\{((?:[a-z_]+="[^"]*",?)*)\})? (\S+)')
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

HISTORY: Any = [
    {"role": "user", "content": "run the tests"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": LOG},
]


def parse(text: str) -> Samples:
    """The samples of an exposition, checking that each belongs to a family declared (HELP and
    TYPE) before it, with the suffixes its type allows."""
    declared: dict[str, str] = {}
    samples: Samples = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            declared[name] = kind
            continue
        if line.startswith("# HELP ") or not line:
            continue
        match = _SAMPLE.fullmatch(line)
        assert match, f"not a sample: {line!r}"
        name, labels, value = match.groups()
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        kind = declared.get(name) or declared.get(family)
        assert kind is not None, f"{name} has no TYPE line before it"
        assert kind == "histogram" or name in declared, f"{name}: a suffix only histograms have"
        pairs = re.findall(r'([a-z_]+)="([^"]*)"', labels or "")
        samples[name, frozenset(pairs)] = float(value)
    return samples


def _one(samples: Samples, name: str, **labels: str) -> float:
    return samples[name, frozenset(labels.items())]


@pytest.fixture
def refusing() -> Iterator[FakeUpstream]:
    with FakeUpstream(script=lambda r: json_reply({"type": "error"}, 429)) as fake:
        yield fake


def _conversation(proxy: BackgroundProxy) -> None:
    """Two turns of a chat whose tool output is long: both requests are rewritten."""
    chat = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
    chat.chat.completions.create(model="gpt-test", messages=HISTORY)
    reply = {"role": "assistant", "content": "1 failed"}
    chat.chat.completions.create(
        model="gpt-test", messages=[*HISTORY, reply, {"role": "user", "content": "fix it"}]
    )


def _refused(proxy: BackgroundProxy) -> None:
    client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant", max_retries=0)
    with pytest.raises(anthropic.RateLimitError):
        client.messages.create(
            model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )


def test_metrics_count_the_requests_the_tokens_and_the_rewrite_time(
    make_proxy: ProxyFactory, tmp_path: Path
):
    proxy = make_proxy("default", originals_dir=tmp_path)
    _conversation(proxy)
    book = proxy.app.state.stats
    assert wait_for(lambda: book.snapshot()["total"]["requests"] == 2)
    answer = httpx.get(proxy.url + "/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = parse(answer.text)
    assert _one(samples, "tokenlean_requests_total", api="openai_chat", status="200") == 2
    assert _one(samples, "tokenlean_rewritten_requests_total", api="openai_chat") == 2
    assert _one(samples, "tokenlean_results_shortened_total", api="openai_chat") == 2
    total = book.snapshot()["total"]  # the figures of the same book as GET /tokenlean/stats
    tokens_in = _one(samples, "tokenlean_tokens_in_total", api="openai_chat")
    tokens_sent = _one(samples, "tokenlean_tokens_sent_total", api="openai_chat")
    assert (tokens_in, tokens_sent) == (total["tokens_in"], total["tokens_sent"])
    assert tokens_sent < tokens_in / 3  # the long log was shortened
    assert _one(samples, "tokenlean_estimated_saving_ratio", api="openai_chat") > 0.5
    count = _one(samples, "tokenlean_rewrite_seconds_count", api="openai_chat")
    assert count == _one(samples, "tokenlean_rewrite_seconds_bucket", api="openai_chat", le="+Inf")
    assert count == 2
    assert _one(samples, "tokenlean_rewrite_seconds_sum", api="openai_chat") > 0


def test_an_error_status_is_its_own_series(make_proxy: ProxyFactory, refusing: FakeUpstream):
    proxy = make_proxy("default", upstream=refusing.url)
    _refused(proxy)
    assert wait_for(lambda: proxy.app.state.stats.snapshot()["total"]["requests"] == 1)
    samples = parse(httpx.get(proxy.url + "/metrics").text)
    assert _one(samples, "tokenlean_requests_total", api="anthropic", status="429") == 1
    assert [k for k in samples if k[0] == "tokenlean_requests_total"] == [
        ("tokenlean_requests_total", frozenset({("api", "anthropic"), ("status", "429")}))
    ]
    assert refusing.requests[-1].path == "/v1/messages"  # /metrics never went upstream
