"""Slow clients are held to deadlines, and a flood of half-open connections cannot lock a
client with the token out: each on real sockets against a real proxy (issue 45, item 4), served
by either parser's protocol (httptools', where it is installed, and h11's).

Timing is asserted only loosely: "closed before many times the deadline", never how soon.
"""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tokenlean.proxy import ProxySettings, _connections
from tokenlean.proxy._connections import MAX_HEAD_BYTES, LimitedH11Protocol
from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import TOKEN, ProxyFactory, free_port, log_turn

DEADLINE = 1.0
#: A connection still open after this many deadlines is taken as held for good.
TIMES = 10
GENEROUS = 60.0


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=GENEROUS)


def _drip(sock: socket.socket, data: bytes, every: float = 0.25) -> bytes:
    """Send ``data`` a byte at a time until the proxy answers or closes; what it answered."""
    sock.settimeout(every)
    stop = time.monotonic() + TIMES * DEADLINE
    for byte in data:
        if time.monotonic() > stop:
            break
        try:
            sock.sendall(bytes([byte]))
            answer = sock.recv(65536)
        except TimeoutError:
            continue  # the proxy is still waiting for more
        except (ConnectionResetError, BrokenPipeError):
            return b""
        return answer  # closed (b"") or answered
    raise AssertionError(f"the connection was still open after {TIMES} deadlines")


@pytest.fixture(params=["httptools", "h11"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which parser's protocol serves the proxies the test starts."""
    if request.param == "h11":
        monkeypatch.setattr(_connections, "LimitedHttpToolsProtocol", None)
    elif _connections.LimitedHttpToolsProtocol is None:
        pytest.skip("httptools is not installed (the proxy extra installs it)")
    return str(request.param)


def _answer(sock: socket.socket) -> bytes:
    """What the proxy sends until it closes the connection."""
    sock.settimeout(GENEROUS)
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except ConnectionResetError:  # closed with some of the request unread
        pass
    return answer


def _closed_by_proxy(sock: socket.socket) -> bool:
    sock.settimeout(GENEROUS)
    with sock:
        try:
            return sock.recv(1) == b""
        except ConnectionResetError:  # closed with the half request unread
            return True


@pytest.mark.usefixtures("parser")
def test_a_request_head_dripped_past_its_deadline_is_closed(make_proxy: ProxyFactory):
    proxy = make_proxy(head_timeout=DEADLINE)
    head = b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\n" + b"x-drip: " + b"a" * 400
    with _connect(proxy.url) as sock:
        assert _drip(sock, head) == b""


@pytest.mark.usefixtures("parser")
def test_half_a_request_line_is_closed_too(make_proxy: ProxyFactory):
    proxy = make_proxy(head_timeout=DEADLINE)
    with _connect(proxy.url) as sock:
        assert _drip(sock, b"POST /v1/messages" + b"a" * 400) == b""


@pytest.mark.usefixtures("parser")
def test_a_body_dripped_past_its_deadline_gets_a_408(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    proxy = make_proxy(body_timeout=DEADLINE)
    head = b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 1000\r\n\r\n"
    with _connect(proxy.url) as sock:
        sock.sendall(head)
        answer = _drip(sock, b"{" + b" " * 998 + b"}")
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408")
    assert upstream.requests == []


@pytest.mark.usefixtures("parser")
def test_a_client_keeping_to_the_deadlines_is_served(make_proxy: ProxyFactory):
    proxy = make_proxy(head_timeout=DEADLINE, body_timeout=DEADLINE)
    reply = httpx.post(proxy.url + "/v1/messages", json=log_turn(), timeout=GENEROUS)
    assert reply.status_code == 200


@pytest.mark.usefixtures("parser")
def test_past_max_connections_the_oldest_waiting_for_a_head_are_shed(make_proxy: ProxyFactory):
    proxy = make_proxy(max_connections=4, head_timeout=GENEROUS)
    waiting = []
    for _ in range(10):
        sock = _connect(proxy.url)
        sock.sendall(b"POST /v1/mess")
        waiting.append(sock)
    reply = httpx.post(proxy.url + "/v1/messages", json=log_turn(), timeout=GENEROUS)
    assert reply.status_code == 200
    for sock in waiting[:6]:  # the six oldest made room for the newer ones
        assert _closed_by_proxy(sock)
    for sock in waiting[6:]:
        sock.close()


def test_each_parser_serves_the_proxy(parser: str, make_proxy: ProxyFactory):
    proxy = make_proxy(head_timeout=GENEROUS)
    with _connect(proxy.url) as sock:
        sock.sendall(b"POST /v1/mess")
        connections = proxy._server.server_state.connections
        deadline = time.monotonic() + GENEROUS
        while not connections and time.monotonic() < deadline:  # until it is accepted
            time.sleep(0.01)
        served = {type(c) for c in connections}
    expected = LimitedH11Protocol if parser == "h11" else _connections.LimitedHttpToolsProtocol
    assert served == {expected}


@pytest.mark.usefixtures("parser")
@pytest.mark.parametrize("ended", [True, False])
@pytest.mark.parametrize("pieces", [1, 20])
def test_a_request_head_over_the_bound_is_refused(
    make_proxy: ProxyFactory, upstream: FakeUpstream, pieces: int, ended: bool
):
    """Refused, not held until the head deadline, whether it ends or not; over 256 KiB, so
    no parser reads it whole at once."""
    proxy = make_proxy(head_timeout=GENEROUS)
    head = b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: " + b"a" * 20 * MAX_HEAD_BYTES
    head += b"\r\ncontent-length: 0\r\n\r\n" if ended else b""
    started = time.monotonic()
    with _connect(proxy.url) as sock:
        step = -(-len(head) // pieces)
        try:
            for at in range(0, len(head), step):
                sock.sendall(head[at : at + step])
                time.sleep(0.01)
        except (ConnectionResetError, BrokenPipeError):
            pass  # refused before the rest was sent
        answer = _answer(sock)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400")
    assert time.monotonic() - started < GENEROUS / 2
    assert upstream.requests == []


@pytest.mark.usefixtures("parser")
def test_a_head_under_the_bound_with_a_large_body_in_one_send_is_served(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    proxy = make_proxy(head_timeout=GENEROUS)
    body = log_turn()
    body["messages"][0]["content"] = "run the tests " + "x" * 2**20
    content = json.dumps(body).encode()
    head = b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
    head += b"x-agent-note: " + b"n" * (MAX_HEAD_BYTES // 2) + b"\r\n"
    head += b"connection: close\r\ncontent-length: %d\r\n\r\n" % len(content)
    with _connect(proxy.url) as sock:
        sock.sendall(head + content)
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert len(upstream.requests) == 1


@pytest.mark.parametrize("name", ["head_timeout", "body_timeout"])
def test_deadlines_must_be_positive(name: str):
    with pytest.raises(ValueError, match=name):
        ProxySettings(**{name: 0})


def test_max_connections_must_be_positive():
    with pytest.raises(ValueError, match="max_connections"):
        ProxySettings(max_connections=0)


@pytest.mark.parametrize("option", ["--head-timeout", "--body-timeout", "--max-connections"])
def test_the_limits_are_checked_on_the_command_line(option: str):
    command = [sys.executable, "-m", "tokenlean.cli", "proxy", option, "0"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=GENEROUS)
    assert done.returncode == 2 and option[2:].replace("-", "_") in done.stderr


#: The proxy's open-file limit in the flood test, and how many half-open connections it gets.
FILE_LIMIT = 128
FLOOD = 200


def _limit_files() -> None:  # in the proxy's process, before it starts
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


@pytest.fixture
def limited_proxy(tmp_path: Path) -> Iterator[tuple[FakeUpstream, str]]:
    """``tokenlean proxy --token`` in a process that may open only :data:`FILE_LIMIT` files."""
    with FakeUpstream() as upstream:
        port = free_port()
        command = [sys.executable, "-m", "tokenlean.cli", "proxy", "--port", str(port), "-q"]
        command += ["--upstream", upstream.url, "--originals", str(tmp_path), "--token", TOKEN]
        log = tmp_path / "proxy.log"  # not a pipe: one nobody reads would stall the proxy
        with log.open("wb") as err:
            process = subprocess.Popen(command, stderr=err, preexec_fn=_limit_files)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(url, process, log)
            yield upstream, url
        finally:
            process.terminate()
            process.wait(GENEROUS)


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + GENEROUS
    while True:
        try:
            httpx.get(url + "/metrics", timeout=GENEROUS)
            return
        except httpx.TransportError:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the proxy did not start"
            time.sleep(0.1)


@pytest.mark.skipif(sys.platform != "linux", reason="sets the proxy's file limit (Linux rlimit)")
def test_a_half_open_flood_does_not_lock_out_a_client_with_the_token(
    limited_proxy: tuple[FakeUpstream, str],
):
    upstream, url = limited_proxy
    flood = []
    try:
        for _ in range(FLOOD):  # each one sends half a request line, then nothing
            sock = _connect(url)
            sock.sendall(b"POST /v1/mess")
            flood.append(sock)
        headers = {"x-tokenlean-token": TOKEN}
        content = json.dumps(log_turn()).encode()
        reply = httpx.post(url + "/v1/messages", content=content, headers=headers, timeout=20.0)
        assert reply.status_code == 200
        assert len(upstream.requests) == 1
    finally:
        for sock in flood:
            sock.close()
