"""Safe by default: what a web page, a rebinding name, another local program or a leaky log line
can get from the proxy (issue 23, part 1)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tokenlean.cost import ANTHROPIC, OPENAI
from tokenlean.proxy import (
    BackgroundProxy,
    Prepared,
    ProxySettings,
    StatsBook,
    create_app,
    default_rewriter,
)
from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import TOKEN, ProxyFactory, log_turn, wait_for, with_token

GENEROUS = 30.0
BODY: dict[str, Any] = log_turn("claude-test", "t1")


def _post(url: str, body: Any = BODY, **headers: str) -> httpx.Response:
    merged = {"content-type": "application/json", **headers}
    content = json.dumps(body).encode()
    return httpx.post(url + "/v1/messages", content=content, headers=merged, timeout=GENEROUS)


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


@pytest.mark.parametrize(
    "browser",
    [
        {"origin": "https://evil.example"},
        {"sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors"},
        {"sec-fetch-mode": "navigate"},
    ],
)
def test_a_browser_request_is_refused_before_its_body_is_read(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path, browser: dict[str, str]
):
    """A web page's ``text/plain`` POST (no preflight needed) used to be processed: rewritten,
    its originals written to disk, and forwarded."""
    originals = tmp_path / "originals"
    proxy = make_proxy(rewriter=default_rewriter(originals))
    refused = _post(proxy.url, **{"content-type": "text/plain", **browser})
    assert refused.status_code == 403
    assert refused.json()["error"]["type"] == "forbidden_origin"
    assert upstream.requests == []
    assert _files(originals) == []
    # The same body from a program is served, and the rewrite does keep an original.
    assert _post(proxy.url, **{"content-type": "text/plain"}).status_code == 200
    assert _files(originals)


def test_nodes_own_fetch_header_is_not_a_browser(make_proxy: ProxyFactory, upstream: FakeUpstream):
    """Node's ``fetch`` (Claude Code, gemini-cli) sends ``sec-fetch-mode: cors`` by itself."""
    proxy = make_proxy()
    assert _post(proxy.url, **{"sec-fetch-mode": "cors"}).status_code == 200
    assert len(upstream.requests) == 1


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8787", "10.0.0.7"])
def test_a_rebinding_host_is_refused(make_proxy: ProxyFactory, upstream: FakeUpstream, host: str):
    """After DNS rebinding a page reaches the proxy under its own name; it used to read every
    session's statistics and to have its requests forwarded."""
    proxy = make_proxy()
    assert _post(proxy.url, **{"x-tokenlean-session": "mine"}).status_code == 200
    stats = httpx.get(
        proxy.url + "/tokenlean/stats",
        headers={"host": host, "x-tokenlean-session": "mine"},
        timeout=GENEROUS,
    )
    assert stats.status_code == 403
    assert stats.json()["error"]["type"] == "forbidden_host"
    assert _post(proxy.url, host=host).status_code == 403
    assert len(upstream.requests) == 1


@pytest.mark.parametrize(
    ("host", "allowed"),
    [("localhost:8787", ()), ("[::1]:8787", ()), ("proxy.internal:8787", ("proxy.internal",))],
)
def test_loopback_names_and_allowed_hosts_are_served(
    make_proxy: ProxyFactory, upstream: FakeUpstream, host: str, allowed: tuple[str, ...]
):
    proxy = make_proxy(allowed_hosts=allowed)
    assert _post(proxy.url, host=host).status_code == 200


def test_the_cli_refuses_to_listen_beyond_loopback_without_a_token():
    env = {k: v for k, v in os.environ.items() if k != "TOKENLEAN_PROXY_TOKEN"}
    command = [sys.executable, "-m", "tokenlean.cli", "proxy", "--host", "0.0.0.0", "--port", "0"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 2
    assert "--token or TOKENLEAN_PROXY_TOKEN" in run.stderr
    from tokenlean.proxy import check_listen  # the same check, for embedders

    with pytest.raises(ValueError, match="reachable from other machines"):
        check_listen("192.168.1.5", ProxySettings())
    check_listen("0.0.0.0", ProxySettings(token=TOKEN))  # with a token it may
    check_listen("::1", ProxySettings())
    with pytest.raises(ValueError, match="--token or TOKENLEAN_PROXY_TOKEN"):
        BackgroundProxy(create_app(ProxySettings(), rewriter=None), host="0.0.0.0")
    with pytest.raises(ValueError, match="at least 16 characters"):
        ProxySettings(token="short")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_cli_takes_its_token_from_the_environment():
    port = _free_port()
    with FakeUpstream() as upstream:
        command = [sys.executable, "-m", "tokenlean.cli", "proxy", "--port", str(port)]
        env = {**os.environ, "TOKENLEAN_PROXY_TOKEN": TOKEN}
        process = subprocess.Popen(
            [*command, "--upstream", upstream.url], stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + GENEROUS
            while True:
                try:
                    without = _post(url)
                    break
                except httpx.ConnectError:
                    assert time.monotonic() < deadline, "the proxy did not start"
                    time.sleep(0.1)
            assert without.status_code == 401
            assert _post(url, **{"x-tokenlean-token": TOKEN}).status_code == 200
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=GENEROUS)
        finally:
            process.kill()
    assert len(upstream.requests) == 1
    assert TOKEN not in err  # the banner says how to pass it, never what it is


def test_requests_without_the_token_get_401(make_proxy: ProxyFactory, upstream: FakeUpstream):
    proxy = make_proxy(token=TOKEN)
    wrong = "wrong-token-0123456789abcdef"
    replies = [
        _post(proxy.url),
        _post(proxy.url, **{"x-tokenlean-token": wrong}),
        _post(f"{proxy.url}/t/{wrong}"),
        httpx.get(proxy.url + "/tokenlean/stats", timeout=GENEROUS),
    ]
    assert [r.status_code for r in replies] == [401] * 4
    assert all(wrong not in r.text and TOKEN not in r.text for r in replies)
    assert upstream.requests == []
    untokened = make_proxy()  # a base URL with a token for a proxy without one is a mistake
    assert _post(f"{untokened.url}/t/{TOKEN}").status_code == 401
    assert upstream.requests == []


@pytest.mark.parametrize("way", ["header", "prefix"])
def test_the_token_works_with_the_real_sdks(
    make_proxy: ProxyFactory, upstream: FakeUpstream, way: str
):
    proxy = make_proxy(token=TOKEN)
    base = with_token(proxy) if way == "prefix" else proxy.url
    headers = {"x-tokenlean-token": TOKEN} if way == "header" else {}
    claude = anthropic.Anthropic(
        base_url=base, api_key="sk-ant-test", max_retries=0, default_headers=headers
    )
    gpt = openai.OpenAI(
        base_url=base + "/v1", api_key="sk-test", max_retries=0, default_headers=headers
    )
    messages: Any = [{"role": "user", "content": "hi"}]
    claude.messages.create(model="claude-test", max_tokens=8, messages=messages)
    gpt.chat.completions.create(model="gpt-test", messages=messages)
    assert [r.path for r in upstream.requests] == ["/v1/messages", "/v1/chat/completions"]
    for sent in upstream.requests:  # the proxy takes its token off before forwarding
        assert TOKEN not in json.dumps(sent.headers)
    assert "sk-ant-test" in json.dumps(upstream.requests[0].headers)


def _with_session(session: str) -> dict[str, Any]:
    return {**BODY, "messages": [{"role": "user", "content": f"task {session}"}]}


def test_a_client_sees_only_its_own_sessions_stats(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    """Every local program used to read every session's counts."""
    proxy = make_proxy()
    for session, turns in (("alpha", 2), ("beta", 1)):
        for _ in range(turns):
            reply = _post(proxy.url, _with_session(session), **{"x-tokenlean-session": session})
            assert reply.status_code == 200
    claude = {**_with_session("gamma"), "metadata": {"user_id": "user-gamma"}}
    assert _post(proxy.url, claude).status_code == 200

    def stats(**headers: str) -> httpx.Response:
        return httpx.get(proxy.url + "/tokenlean/stats", headers=headers, timeout=GENEROUS)

    assert wait_for(lambda: stats(**{"x-tokenlean-session": "beta"}).json()["sessions"])
    assert wait_for(lambda: stats(**{"x-tokenlean-session": "user-gamma"}).json()["sessions"])
    assert stats().status_code == 403  # naming no session shows none
    alpha = stats(**{"x-tokenlean-session": "alpha"}).json()
    assert alpha["total"]["requests"] == 2
    assert [s["requests"] for s in alpha["sessions"].values()] == [2]
    (gamma,) = stats(**{"x-tokenlean-session": "user-gamma"}).json()["sessions"].values()
    assert gamma["key"] == "metadata.user_id"  # a client names its session by its own id too
    assert stats(**{"x-tokenlean-session": "nobody"}).json()["sessions"] == {}


def test_naming_a_guessed_first_message_shows_no_session(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    """A session keyed by its first user message used to answer to that message's JSON as its
    name: without the token, any local program could confirm a guessed prompt."""
    proxy = make_proxy()
    assert _post(proxy.url, _with_session("secret project")).status_code == 200
    book: StatsBook = proxy.app.state.stats
    assert wait_for(lambda: book.snapshot()["total"]["requests"] == 1)
    (counted,) = book.snapshot()["sessions"].values()
    assert counted["key"] == "first user message"
    guess = json.dumps("task secret project")  # the first message's canonical JSON
    url = proxy.url + "/tokenlean/stats"
    named = httpx.get(url, headers={"x-tokenlean-session": guess}, timeout=GENEROUS).json()
    assert named["sessions"] == {} and named["total"]["requests"] == 0


def test_the_token_shows_every_session(make_proxy: ProxyFactory, upstream: FakeUpstream):
    url = with_token(make_proxy(token=TOKEN))
    for session in ("alpha", "beta"):
        assert _post(url, _with_session(session)).status_code == 200
    stats = lambda: httpx.get(url + "/tokenlean/stats", timeout=GENEROUS).json()  # noqa: E731
    assert wait_for(lambda: stats()["total"]["requests"] == 2)
    assert len(stats()["sessions"]) == 2


def _book(**kwargs: Any) -> StatsBook:
    return StatsBook({"anthropic": ANTHROPIC, "openai_chat": OPENAI}, **kwargs)


def _record(book: StatsBook, body: dict[str, Any]) -> str:
    raw = json.dumps(body).encode()
    record = book.record("anthropic", {}, Prepared(raw, raw), 200)
    assert record is not None
    return record.session


def test_session_labels_are_salted():
    """The label of a first-message session was the plain hash of that message: anyone who saw
    a label could confirm a guessed prompt."""
    body = _with_session("secret project")
    first = body["messages"][0]["content"]
    canonical = json.dumps(first, sort_keys=True, separators=(",", ":"))
    unsalted = hashlib.sha256(f"anthropic\n{canonical}".encode()).hexdigest()[:12]
    labels = {_record(_book(salt=salt), body) for salt in (b"worker salt", b"other salt")}
    assert len(labels) == 2 and unsalted not in labels
    # Workers given the same salt agree on the label; each process has its own by default.
    assert _record(_book(salt=b"worker salt"), body) in labels
    assert ProxySettings().session_salt != ProxySettings().session_salt


def test_the_session_table_is_bounded(make_proxy: ProxyFactory, upstream: FakeUpstream):
    url = with_token(make_proxy(token=TOKEN, max_sessions=2))
    for session in ("alpha", "beta", "alpha", "gamma"):  # beta is the least recently seen
        assert _post(url, _with_session(session)).status_code == 200
    stats = lambda: httpx.get(url + "/tokenlean/stats", timeout=GENEROUS).json()  # noqa: E731
    assert wait_for(lambda: stats()["total"]["requests"] == 4)  # the dropped one still counts
    snapshot = stats()
    assert sorted(s["requests"] for s in snapshot["sessions"].values()) == [1, 2]
    assert snapshot["sessions_dropped"] == 1


def test_credentials_in_the_upstream_url_are_never_echoed(
    make_proxy: ProxyFactory, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.DEBUG, logger="tokenlean.proxy")
    proxy = make_proxy(upstream=f"http://user:hunter2@127.0.0.1:{_free_port()}")
    reply = _post(proxy.url)
    assert reply.status_code == 502
    assert "127.0.0.1" in reply.json()["error"]["message"]  # it still names the upstream
    assert "unreachable" in caplog.text
    assert "hunter2" not in reply.text and "hunter2" not in caplog.text
