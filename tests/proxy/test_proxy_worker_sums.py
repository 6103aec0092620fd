"""``tokenlean proxy --workers 2``: ``/metrics`` and ``/tokenlean/stats`` sum both processes,
whichever answers a scrape, and never go down between scrapes (issue 45, item 5)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import TOKEN, free_port, log_turn
from .test_metrics import parse

GENEROUS = 60.0
REQUESTS = 20
HEADERS = {"x-tokenlean-token": TOKEN}


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[tuple[FakeUpstream, str]]:
    with FakeUpstream() as upstream:
        port = free_port()
        command = [sys.executable, "-m", "tokenlean.cli", "proxy", "--port", str(port), "-q"]
        command += ["--upstream", upstream.url, "--originals", str(tmp_path / "originals")]
        command += ["--workers", "2", "--token", TOKEN, "--ab", "0.5"]
        command += ["--ab-log", str(tmp_path / "ab.jsonl")]
        log = tmp_path / "proxy.log"  # not a pipe: one nobody reads would stall the proxy
        with log.open("wb") as err:
            process = subprocess.Popen(command, stderr=err)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + GENEROUS
            while True:
                try:
                    httpx.get(url + "/metrics", headers=HEADERS, timeout=GENEROUS)
                    break
                except httpx.TransportError:
                    assert process.poll() is None, log.read_text()
                    assert time.monotonic() < deadline, "the proxy did not start"
                    time.sleep(0.1)
            yield upstream, url
        finally:
            process.terminate()
            process.wait(GENEROUS)


def _requests_total(url: str, name: str = "tokenlean_requests_total") -> float:
    text = httpx.get(url + "/metrics", headers=HEADERS, timeout=GENEROUS).text
    return sum(v for (found, _), v in parse(text).items() if found == name)


def _stats_total(url: str) -> int:
    stats = httpx.get(url + "/tokenlean/stats", headers=HEADERS, timeout=GENEROUS).json()
    return int(stats["total"]["requests"])


def test_scrapes_sum_every_worker_and_never_go_down(two_workers: tuple[FakeUpstream, str]):
    upstream, url = two_workers
    content = json.dumps(log_turn()).encode()
    seen: list[tuple[float, int]] = []
    for _ in range(REQUESTS):  # a new connection each: the kernel spreads them over the workers
        reply = httpx.post(url + "/v1/messages", content=content, headers=HEADERS)
        assert reply.status_code == 200
        seen.append((_requests_total(url), _stats_total(url)))
    deadline = time.monotonic() + GENEROUS
    while seen[-1] != (REQUESTS, REQUESTS) and time.monotonic() < deadline:
        time.sleep(0.1)  # the last requests are counted after their answers
        seen.append((_requests_total(url), _stats_total(url)))
    for _ in range(10):  # and scrapes that land on either worker agree from then on
        seen.append((_requests_total(url), _stats_total(url)))
    assert len(upstream.requests) == REQUESTS
    assert seen[-11:] == [(REQUESTS, REQUESTS)] * 11, seen
    metrics, stats = [m for m, _ in seen], [s for _, s in seen]
    assert metrics == sorted(metrics) and stats == sorted(stats), seen
    # the A/B arms' counters too (one session: in one arm, whichever worker counted)
    assert _requests_total(url, "tokenlean_ab_requests_total") == REQUESTS
