"""Failure is pass-through: errors, unreachable upstreams, odd bodies, size limits, streams the
client abandons, and responses that must arrive as they are produced."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tokenlean.proxy._scan import scan_body
from tokenlean.proxy._settings import MAX_BODY_BYTES
from tokenlean.testing.upstream import (
    FakeUpstream,
    Recorded,
    Reply,
    anthropic_events,
    json_reply,
    sse_event,
    sse_reply,
)

from .proxy_support import TOKEN, ProxyFactory, marker_rewriter, wait_for, with_token

#: Bounds a test that would otherwise hang; not a speed assertion.
GENEROUS = 30.0


def _post(url: str, content: bytes, path: str = "/v1/messages", **headers: str) -> httpx.Response:
    merged = {"content-type": "application/json", **headers}
    return httpx.post(url + path, content=content, headers=merged, timeout=GENEROUS)


@pytest.mark.parametrize(
    ("status", "body", "content_type"),
    [
        (
            429,
            b'{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}',
            "application/json",
        ),
        (
            400,
            b'{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}',
            "application/json",
        ),
        (500, b"upstream exploded\n", "text/plain"),
        (
            529,
            b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}',
            "application/json",
        ),
    ],
)
def test_upstream_errors_reach_the_client_unchanged(
    make_proxy: ProxyFactory, upstream: FakeUpstream, status: int, body: bytes, content_type: str
):
    upstream.script = lambda r: Reply(
        status, body, (("content-type", content_type), ("retry-after", "7"))
    )
    proxy = make_proxy(rewriter=marker_rewriter())
    reply = _post(proxy.url, b'{"model":"m","messages":[]}')
    assert reply.status_code == status
    assert reply.content == body
    assert reply.headers["retry-after"] == "7"
    assert reply.headers["content-type"] == content_type


def test_sdk_sees_the_upstream_error(make_proxy: ProxyFactory, upstream: FakeUpstream):
    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    upstream.script = lambda r: json_reply(error, 429)
    client = anthropic.Anthropic(base_url=make_proxy().url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.RateLimitError) as caught:
        client.messages.create(model="m", max_tokens=1, messages=[{"role": "user", "content": "x"}])
    assert caught.value.body == error


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_refused_upstream_gives_502_naming_it(make_proxy: ProxyFactory):
    dead = f"http://127.0.0.1:{_closed_port()}"
    proxy = make_proxy(upstream=dead)
    reply = _post(proxy.url, b'{"model":"m","messages":[]}')
    assert reply.status_code == 502
    error = reply.json()["error"]
    assert error["type"] == "upstream_unreachable"
    assert dead in error["message"]
    client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model="m", max_tokens=1, messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 502
    assert dead in str(caught.value)


@pytest.fixture
def silent_upstream() -> Iterator[str]:
    """A listener whose accept queue is full, so new connections hang (a dead host)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    yield f"http://127.0.0.1:{port}"
    for s in [*fillers, server]:
        s.close()


def test_hanging_connect_gives_502_after_the_connect_timeout(
    make_proxy: ProxyFactory, silent_upstream: str
):
    proxy = make_proxy(upstream=silent_upstream, connect_timeout=1.0)
    reply = _post(proxy.url, b'{"model":"m","messages":[]}')
    assert reply.status_code == 502
    assert silent_upstream in reply.json()["error"]["message"]


@pytest.mark.parametrize(
    "body",
    [
        b"\xff\xfe not json at all",
        b'{"model": "m", "messages": [ {"role":"user","content":"tl-marker"} ',  # truncated
        b'["tl-marker"]',  # JSON, but not an object
        b'{"model":"m","messages":[{"role":"user","content":"tl-marker"}],}',  # trailing comma
        b'{"model":  "m" ,\n "messages":[{"role":"user","content":"kept as sent"}]}',
    ],
)
def test_bodies_the_rewrite_does_not_change_go_byte_identical(
    make_proxy: ProxyFactory, upstream: FakeUpstream, body: bytes
):
    proxy = make_proxy(rewriter=marker_rewriter())
    _post(proxy.url, body)
    assert upstream.requests[-1].body == body


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(
    "body",
    [
        b'{"model":"m","messages":[{"role":"user","content":"tl-marker"}],"deep":'
        + _nested(5000)
        + b"}",
        b'{"model":"m","messages":[{"role":"user","content":[' + _nested(5000) + b"]}]}",
    ],
    ids=["beside the messages", "inside a message"],
)
def test_a_body_nested_too_deeply_to_parse_goes_upstream_unchanged(
    make_proxy: ProxyFactory, upstream: FakeUpstream, body: bytes
):
    """Python's JSON parser gives up at about a thousand levels (RecursionError); the provider
    judges such a body, the proxy neither answers 500 nor rewrites it."""
    upstream.script = lambda r: json_reply({"type": "message", "content": []})
    proxy = make_proxy(rewriter=marker_rewriter())
    reply = _post(proxy.url, body)
    assert reply.status_code == 200
    assert upstream.requests[-1].body == body


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(
    body=st.dictionaries(st.sampled_from(["model", "messages", "input", "x", ""]), _JSON),
    spaced=st.booleans(),
    ascii_only=st.booleans(),
    encoding=st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-32"]),
    cut=st.integers(min_value=0, max_value=3),
)
@settings(deadline=None)  # the machine's load is no failure of the parse
@example(body={"messages": [1]}, spaced=False, ascii_only=True, encoding="utf-8", cut=2)
@example(body={"messages": ["\ud800"]}, spaced=False, ascii_only=False, encoding="utf-8", cut=0)
def test_the_one_parse_reads_what_json_loads_reads(
    body: dict[str, Any], spaced: bool, ascii_only: bool, encoding: str, cut: int
):
    """The rewrite used to read ``json.loads(raw)``; it now reads the scanner's values, so the
    two must agree on every body (read or refused alike), or forwarded bytes would change."""
    text = json.dumps(body, ensure_ascii=ascii_only, indent=1 if spaced else None)
    # some bodies broken: truncated, a trailing comma, data after the object
    text = [text, text[:-1], text[:-1] + ",}", text + " 1"][cut]
    data = text.encode(encoding, "surrogatepass")
    try:
        expected = json.loads(data)
    except ValueError:
        expected = None
    for key in ("messages", "input"):
        scanned = scan_body(data, key)
        if isinstance(expected, dict):
            assert scanned is not None and scanned.values == expected
            assert list(scanned.values) == list(expected)
        else:
            assert scanned is None


def test_a_failing_rewriter_forwards_the_original(make_proxy: ProxyFactory, upstream: FakeUpstream):
    def broken(api: Any, body: Any) -> Any:
        raise RuntimeError("rewrite bug")

    url = with_token(make_proxy(rewriter=broken, token=TOKEN))
    body = b'{"model":"m", "messages":[{"role":"user","content":"tl-marker"}]}'
    reply = _post(url, body)
    assert reply.status_code == 200
    assert upstream.requests[-1].body == body
    stats = httpx.get(url + "/tokenlean/stats", timeout=GENEROUS).json()
    assert stats["total"]["rewritten"] == 0


def test_rewritten_body_has_its_own_length(make_proxy: ProxyFactory, upstream: FakeUpstream):
    proxy = make_proxy(rewriter=marker_rewriter())
    _post(proxy.url, b'{"model":"m",   "messages":[{"role":"user","content":"tl-marker"}]}')
    sent = upstream.requests[-1]
    assert sent.header("content-length") == str(len(sent.body))
    assert sent.json()["messages"][0]["content"] == "TL-MARKER"


def test_hop_by_hop_and_own_headers_stay_behind(make_proxy: ProxyFactory, upstream: FakeUpstream):
    proxy = make_proxy()
    _post(
        proxy.url,
        b"{}",
        path="/v1/files/a%2Fb?limit=5",
        connection="keep-alive, x-per-hop",
        **{"x-per-hop": "1", "x-tokenlean-session": "s1", "x-end-to-end": "yes"},
    )
    sent = upstream.requests[-1]
    assert (sent.path, sent.query) == ("/v1/files/a%2Fb", "limit=5")  # escapes kept
    names = {k for k, _ in sent.headers}
    assert "x-per-hop" not in names
    assert "x-tokenlean-session" not in names
    assert sent.header("x-end-to-end") == "yes"
    assert sent.header("host") == upstream.url.removeprefix("http://")


def _body_of_size(size: int) -> bytes:
    head = b'{"model":"m","messages":[{"role":"user","content":"'
    tail = b'"}]}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


def test_a_32_mb_body_is_forwarded(make_proxy: ProxyFactory, upstream: FakeUpstream):
    proxy = make_proxy(rewriter=marker_rewriter())
    body = _body_of_size(MAX_BODY_BYTES)
    assert _post(proxy.url, body).status_code == 200
    assert upstream.requests[-1].body == body


def test_a_larger_body_is_refused(make_proxy: ProxyFactory, upstream: FakeUpstream):
    proxy = make_proxy()
    reply = _post(proxy.url, _body_of_size(MAX_BODY_BYTES + 1))
    assert reply.status_code == 413
    assert reply.json()["error"]["type"] == "request_too_large"
    assert upstream.requests == []


def test_chunks_reach_the_client_as_the_upstream_sends_them(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    """The upstream holds the rest of its answer until the client has read the first event:
    a proxy that buffered would make the client wait for an event that never comes."""
    client_has_first = threading.Event()
    released: list[bool] = []

    def gated() -> Iterator[bytes]:
        events = anthropic_events([{"type": "text", "text": "one two"}])
        yield events[0]
        released.append(client_has_first.wait(GENEROUS))
        yield from events[1:]

    upstream.script = lambda r: sse_reply(gated())
    client = anthropic.Anthropic(base_url=make_proxy().url, api_key="k", max_retries=0)
    stream = client.messages.create(
        model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}], stream=True
    )
    kinds = []
    for event in stream:
        kinds.append(event.type)
        client_has_first.set()
    assert released == [True]
    assert kinds[0] == "message_start"
    assert kinds[-1] == "message_stop"


def test_a_client_leaving_mid_stream_closes_the_upstream_stream(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    stop = threading.Event()

    def endless() -> Iterator[bytes]:
        n = 0
        while not stop.wait(0.02):
            n += 1
            yield sse_event({"type": "ping", "n": n}, "ping")

    def script(request: Recorded) -> Reply:
        return sse_reply(endless())

    upstream.script = script
    proxy = make_proxy()
    try:
        with httpx.stream(
            "POST", proxy.url + "/v1/messages", content=b"{}", timeout=GENEROUS
        ) as reply:
            first = next(reply.iter_raw())
            assert b"ping" in first
        assert upstream.disconnected.wait(GENEROUS)
    finally:
        stop.set()


def test_stats_endpoint_groups_requests_by_session(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):

    url = with_token(make_proxy(rewriter=marker_rewriter(), token=TOKEN))
    long_result = "tl-marker " + "log line\n" * 200
    for session, turns in (("alpha", 3), ("beta", 1)):
        messages: list[Any] = [{"role": "user", "content": f"task {session}"}]
        for turn in range(turns):
            messages.append({"role": "assistant", "content": f"step {turn}"})
            messages.append({"role": "user", "content": long_result})
            body = {
                "model": "m",
                "max_tokens": 8,
                "messages": messages,
                "metadata": {"user_id": f"user_{session}"},
            }
            assert _post(url, json.dumps(body).encode()).status_code == 200

    def snapshot() -> Any:
        return httpx.get(url + "/tokenlean/stats", timeout=GENEROUS).json()

    assert wait_for(lambda: snapshot()["total"]["requests"] == 4)
    stats = snapshot()
    sessions = sorted(stats["sessions"].values(), key=lambda s: s["requests"])
    assert [s["requests"] for s in sessions] == [1, 3]
    assert {s["key"] for s in sessions} == {"metadata.user_id"}
    assert all(s["rewritten"] == s["requests"] for s in sessions)
    alpha = sessions[1]
    assert alpha["tokens_in"] > 0
    # Requests after the first re-send a cached prefix, so the session bills less than it sends.
    assert alpha["billed_in"] < 1.25 * alpha["tokens_in"]


def test_the_listening_socket_lets_asyncio_turn_nagle_off():
    """asyncio sets TCP_NODELAY only on sockets whose protocol is IPPROTO_TCP; without it every
    reply's last bytes waited for the client's delayed ACK (40 ms a request)."""
    from tokenlean.proxy._server import bind

    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()
