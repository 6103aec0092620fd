"""No spend after the client is gone: a client that leaves at any point before the answer
(while its body is read, rewritten, or the upstream is still thinking) cancels the upstream
request, and a body that never arrives in full does not hold the connection."""

from __future__ import annotations

import socket
import threading
from collections.abc import Mapping
from typing import Any

import anthropic
import pytest

from tokenlean.proxy import ProxySettings
from tokenlean.testing.upstream import FakeUpstream, Recorded, Reply, json_reply

from .proxy_support import ProxyFactory, wait_for

#: Bounds a test that would otherwise hang; not a speed assertion.
GENEROUS = 30.0
MESSAGE = [{"role": "user", "content": "hello"}]


def _slow(seconds: float) -> Any:
    def script(request: Recorded) -> Reply:
        reply = json_reply({"type": "message", "content": []})
        return Reply(reply.status, reply.body, reply.headers, delay=seconds)

    return script


def _give_up_three_times(base_url: str) -> None:
    client = anthropic.Anthropic(base_url=base_url, api_key="k", max_retries=0, timeout=1)
    for _ in range(3):
        with pytest.raises(anthropic.APITimeoutError):
            client.messages.create(model="m", max_tokens=1, messages=MESSAGE)


def _settled(upstream: FakeUpstream, n: int) -> bool:
    return len(upstream.answered) + len(upstream.abandoned) == n


def test_a_client_timing_out_before_the_headers_cancels_the_upstream_request(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    upstream.script = _slow(4.0)
    _give_up_three_times(upstream.url)  # direct: the SDK closes its connection, nothing is spent
    assert wait_for(lambda: _settled(upstream, 3), GENEROUS)
    assert (len(upstream.answered), len(upstream.abandoned)) == (0, 3)
    _give_up_three_times(make_proxy().url)
    assert wait_for(lambda: _settled(upstream, 6), GENEROUS)
    assert (len(upstream.answered), len(upstream.abandoned)) == (0, 6)


def test_a_client_leaving_during_the_rewrite_sends_nothing_upstream(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    started, release = threading.Event(), threading.Event()

    def stalling(api: Any, body: Mapping[str, Any]) -> None:
        started.set()
        release.wait(GENEROUS)

    proxy = make_proxy(rewriter=stalling)
    client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0, timeout=1)
    try:
        with pytest.raises(anthropic.APITimeoutError):
            client.messages.create(model="m", max_tokens=1, messages=MESSAGE)
        assert started.is_set()
    finally:
        release.set()
    # the rewrite has ended; a request left over from it would reach the upstream now
    client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
    client.messages.create(model="m", max_tokens=1, messages=MESSAGE)
    assert len(upstream.requests) == 1  # the second request only


def _partial_request(url: str, declared: int, sent: bytes) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=GENEROUS)
    head = (
        f"POST /v1/messages HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"content-length: {declared}\r\n\r\n"
    )
    sock.sendall(head.encode() + sent)
    return sock


def test_a_body_shorter_than_its_content_length_times_out(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    proxy = make_proxy(body_timeout=0.5)
    with _partial_request(proxy.url, 1000, b'{"model":"m",') as sock:
        answer = b""
        while chunk := sock.recv(65536):  # the proxy answers 408 and closes, or just closes
            answer += chunk
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408")
    assert upstream.requests == []


def test_a_client_leaving_mid_body_sends_nothing_upstream(
    make_proxy: ProxyFactory, upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
):
    proxy = make_proxy()
    _partial_request(proxy.url, 1000, b'{"model":"m",').close()
    anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0).messages.create(
        model="m", max_tokens=1, messages=MESSAGE
    )
    assert len(upstream.requests) == 1
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


@pytest.mark.parametrize("value", [0, -1.0, float("nan")])
def test_body_timeout_must_be_positive(value: float):
    with pytest.raises(ValueError, match="body_timeout"):
        ProxySettings(body_timeout=value)
