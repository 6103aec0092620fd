"""The real google-genai SDK, streamed and not, through the proxy to a recording fake provider:
the long ``functionResponse`` is shortened on the way, everything else arrives as sent."""

from __future__ import annotations

import copy
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from tokenlean.proxy import default_rewriter
from tokenlean.proxy._routing import api_for, mask_key, vendor_for
from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import TOKEN, ProxyFactory, wait_for, with_token

genai = pytest.importorskip("google.genai", reason="needs google-genai (the dev extra)")
types = pytest.importorskip("google.genai.types", reason="needs google-genai (the dev extra)")

ANSWER = "Hello from the fake upstream"
ERROR = "FAILED tests/test_x.py::test_y - AssertionError: 3 != 4"
LOG = "\n".join(
    [*(f"PASSED tests/test_mod{i}.py::test_case_{i} in 0.01s" for i in range(300)), ERROR]
)
CONTENTS: list[dict[str, Any]] = [
    {"role": "user", "parts": [{"text": "Run the tests and fix what fails."}]},
    {
        "role": "model",
        "parts": [{"functionCall": {"name": "run_shell", "args": {"cmd": "pytest"}}}],
    },
    {
        "role": "user",
        "parts": [{"functionResponse": {"name": "run_shell", "response": {"output": LOG}}}],
    },
]
RESULT = ("contents", 2, "parts", 0, "functionResponse", "response", "output")


def _client(url: str, api_version: str | None = None) -> Any:
    options = types.HttpOptions(base_url=url, api_version=api_version)
    return genai.Client(api_key="test-key", http_options=options)


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _sent_body(upstream: FakeUpstream, method: str) -> dict[str, Any]:
    (sent,) = upstream.requests
    assert re.fullmatch(rf"/v1(beta)?/models/gemini-test:{method}", sent.path), sent.path
    assert sent.header("x-goog-api-key") == "test-key"
    body: dict[str, Any] = sent.json()
    return body


def _check_rewrite(body: dict[str, Any], originals: Path) -> None:
    """The long result is shortened (error kept, marker naming the originals file), and every
    other value arrives as the SDK sent it."""
    shortened = _at(body, RESULT)
    assert len(shortened) < len(LOG) / 4 and ERROR in shortened
    (original,) = originals.glob("*.txt")
    assert original.read_text() == LOG and f"full output: {original}" in shortened
    expected = copy.deepcopy(body)
    _at(expected, RESULT[:-1])[RESULT[-1]] = LOG
    sent_contents = expected["contents"]
    for content in sent_contents:  # the SDK may add defaults; the history itself is ours
        for part in content["parts"]:
            for key in [k for k, v in part.items() if v is None]:
                del part[key]
    assert sent_contents == CONTENTS
    assert expected["systemInstruction"]["parts"] == [{"text": "You are a coding agent."}]


def _config() -> Any:
    return types.GenerateContentConfig(system_instruction="You are a coding agent.")


@pytest.mark.parametrize("api_version", [None, "v1beta"])
def test_generate_content(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, api_version: str | None
):
    proxy = make_proxy(rewriter=default_rewriter(tmp_path))
    client = _client(
        proxy.url, api_version
    )  # kept: the SDK closes its connections when the client goes
    reply = client.models.generate_content(model="gemini-test", contents=CONTENTS, config=_config())
    assert reply.text == ANSWER
    _check_rewrite(_sent_body(upstream, "generateContent"), tmp_path)
    assert upstream.requests[0].path.startswith(f"/{api_version or 'v1'}/")


def test_generate_content_stream(make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path):
    proxy = make_proxy(rewriter=default_rewriter(tmp_path))
    client = _client(proxy.url)
    chunks = client.models.generate_content_stream(
        model="gemini-test", contents=CONTENTS, config=_config()
    )
    assert "".join(c.text or "" for c in chunks) == ANSWER
    assert upstream.requests[0].query == "alt=sse"
    _check_rewrite(_sent_body(upstream, "streamGenerateContent"), tmp_path)


def test_stream_goes_back_byte_for_byte(make_proxy: ProxyFactory, upstream: FakeUpstream):
    import httpx

    from tokenlean.testing.upstream import gemini_events

    proxy = make_proxy()
    path = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
    got = httpx.post(proxy.url + path, json={"contents": CONTENTS}, timeout=10)
    assert got.content == b"".join(gemini_events(ANSWER))
    assert got.headers["content-type"] == "text/event-stream"


def test_stats_count_gemini_sessions(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
):
    url = with_token(make_proxy(rewriter=default_rewriter(tmp_path), token=TOKEN))
    client = _client(url)  # the SDK keeps the base URL's path (the token) before its own
    for _ in range(2):
        client.models.generate_content(model="gemini-test", contents=CONTENTS, config=_config())

    def stats() -> dict[str, Any]:
        import httpx

        snapshot: dict[str, Any] = httpx.get(url + "/tokenlean/stats").json()
        return snapshot

    assert wait_for(lambda: stats()["total"]["requests"] == 2)
    total = stats()["total"]
    assert total["rewritten"] == 2 and total["tokens_sent"] < total["tokens_in"]
    (session,) = stats()["sessions"].values()
    assert (session["api"], session["key"]) == ("gemini", "first user message")


def test_a_key_in_the_query_is_forwarded_and_never_shown(
    make_proxy: ProxyFactory, upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
):
    import httpx

    secret = "AIzaSECRET123"
    proxy = make_proxy()
    path = f"/v1/models/gemini-test:generateContent?key={secret}"
    with caplog.at_level(logging.DEBUG, logger="tokenlean.proxy"):
        got = httpx.post(proxy.url + path, json={"contents": CONTENTS}, timeout=10)
        assert got.json()["candidates"][0]["content"]["parts"][0]["text"] == ANSWER
        assert upstream.requests[0].query == f"key={secret}"
        down = make_proxy(upstream="http://127.0.0.1:9")  # nothing listens on the discard port
        failed = httpx.post(down.url + path, json={"contents": CONTENTS}, timeout=10)
    assert failed.status_code == 502
    assert secret not in failed.text
    assert secret not in caplog.text
    assert json.dumps(upstream.requests[0].json()) == json.dumps({"contents": CONTENTS})


@pytest.mark.parametrize(
    ("method", "path", "api", "vendor"),
    [
        ("POST", "/v1beta/models/gemini-2.5-pro:generateContent", "gemini", "google"),
        ("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent", "gemini", "google"),
        ("POST", "/v1/models/gemini-2.5-pro:generateContent/", "gemini", "google"),
        ("POST", "/v1beta/models/gemini-2.5-pro:countTokens", None, "google"),
        ("GET", "/v1beta/models", None, "google"),
        ("POST", "/v1beta/models/a/b:generateContent", None, "google"),
        ("GET", "/v1/models", None, "openai"),
        ("POST", "/v1/chat/completions", "openai_chat", "openai"),
    ],
)
def test_gemini_routes(method: str, path: str, api: str | None, vendor: str):
    assert api_for(method, path) == api
    assert vendor_for(path, {}) == vendor


def test_masked_keys():
    assert mask_key("GET /x?alt=sse&key=AIza-1") == "GET /x?alt=sse&key=***"
    assert mask_key("https://h/x?key=AIza-1&alt=sse") == "https://h/x?key=***&alt=sse"
    assert mask_key("monkey=1") == "monkey=1"


def test_a_stream_without_sse_is_one_json_array(make_proxy: ProxyFactory, upstream: FakeUpstream):
    import httpx

    proxy = make_proxy()
    path = "/v1beta/models/gemini-test:streamGenerateContent"
    got = httpx.post(proxy.url + path, json={"contents": CONTENTS}, timeout=10).json()
    text = "".join(chunk["candidates"][0]["content"]["parts"][0]["text"] for chunk in got)
    assert text == ANSWER and got[-1]["candidates"][0]["finishReason"] == "STOP"
