"""Proxies on several machines sharing one Redis: two ``tokenlean proxy`` processes keep
originals on a real ``redis-server`` (``--originals redis://...``), a marker written through
one is read back by ``tokenlean mcp --originals redis://...`` started on its own, and a proxy
whose Redis cannot be reached forwards requests as they came."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.data import LOG
from tests.redis_server import client, free_port, redis_server
from tokenlean.store import RETRIEVAL_TOOL, excerpt, make_handle
from tokenlean.testing.upstream import FakeUpstream

from .test_mcp_retrieval import HISTORY, SERVED

GENEROUS = 60.0
SECRET = "proxy-redis-Pa55word"
_HINT = re.compile(rf'{RETRIEVAL_TOOL}\("(o\d{{12}})", "(\d+-\d+)"\)')


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment every process gets: the Redis password, and this checkout's code."""
    monkeypatch.setenv("TOKENLEAN_REDIS_PASSWORD", SECRET)
    return dict(os.environ)


@contextmanager
def _proxy(upstream: FakeUpstream, originals: str, env: dict[str, str]) -> Iterator[Any]:
    """A ``tokenlean proxy`` process; yields its URL and, once stopped, its stderr."""
    port = free_port()
    command = [sys.executable, "-m", "tokenlean.cli", "proxy", "--port", str(port)]
    command += ["--upstream", upstream.url, "--originals", originals, "--originals-max-age", "1h"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    url, log = f"http://127.0.0.1:{port}", []
    try:
        _wait_until_up(url, process)
        yield url, log
    finally:
        process.terminate()
        log.append(process.communicate(timeout=GENEROUS)[1])


def _wait_until_up(url: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + GENEROUS
    while True:
        try:
            httpx.get(url + "/tokenlean/stats", timeout=GENEROUS)
            return
        except httpx.TransportError:
            assert process.poll() is None, f"the proxy stopped: {process.communicate()[1]}"
            assert time.monotonic() < deadline, f"the proxy at {url} did not start"
            time.sleep(0.1)


def _chat(url: str) -> httpx.Response:
    body = {"model": "gpt-test", "messages": HISTORY, "tools": [SERVED]}
    headers = {"authorization": "Bearer sk-test"}
    return httpx.post(url + "/v1/chat/completions", json=body, headers=headers, timeout=GENEROUS)


async def _read(originals: str, env: dict[str, str], *calls: dict[str, str]) -> list[str]:
    command = [sys.executable, "-m", "tokenlean.cli", "mcp", "--originals", originals]
    server = StdioServerParameters(command=command[0], args=command[1:], env=env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        answers = []
        for arguments in calls:
            result = await session.call_tool(RETRIEVAL_TOOL, arguments)
            answers.append("".join(getattr(part, "text", "") for part in result.content))
        return answers


async def test_two_proxies_share_one_redis_that_tokenlean_mcp_reads(
    tmp_path: Path, env: dict[str, str]
):
    with (
        redis_server(tmp_path / "redis", password=SECRET) as url,
        FakeUpstream() as upstream,
        _proxy(upstream, url, env) as (first, first_log),
        _proxy(upstream, url, env) as (second, second_log),
    ):
        assert _chat(first).status_code == 200
        assert _chat(second).status_code == 200
        one, two = (r.json() for r in upstream.requests)
        shortened = one["messages"][2]["content"]
        (handle, lines), *_ = _HINT.findall(shortened)
        answers = await _read(url, env, {"handle": handle, "lines": lines}, {"handle": "o0"})
        ttl = client(url, SECRET).ttl(f"tokenlean:originals:o:{handle}")
    assert one == two  # the same bytes upstream, whichever proxy rewrote them
    assert handle == make_handle("o", LOG) and shortened != LOG
    assert answers[0] == excerpt(LOG, lines=lines)  # the very lines the marker stands for
    assert answers[1].startswith("No original with handle 'o0' is kept in redis://127.0.0.1")
    assert 3500 < ttl <= 3600  # --originals-max-age 1h
    assert not [line for line in first_log + second_log if SECRET in line]


def test_a_proxy_whose_redis_is_unreachable_forwards_requests_as_they_came(
    env: dict[str, str],
):
    with (
        FakeUpstream() as upstream,
        _proxy(upstream, f"redis://127.0.0.1:{free_port()}/0", env) as (
            url,
            log,
        ),
    ):
        replies = [_chat(url), _chat(url)]
    assert [r.status_code for r in replies] == [200, 200]
    assert [r.json()["messages"] for r in upstream.requests] == [HISTORY, HISTORY]
    (err,) = log
    assert err.count("cannot be reached") == 1  # logged once, not per request
    assert "Traceback" not in err
