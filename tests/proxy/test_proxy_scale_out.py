"""Two proxy processes behind a load balancer: requests of one conversation alternate between
them, and the provider still sees one drift-free history, byte for byte what one proxy sends.

The rewrite is a pure function of the history, so this holds with ``tokenlean.raw`` plugged in;
without it the proxies forward the client's bytes, and the test checks the forwarding alone.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tokenlean.raw.bodies import anthropic_requests
from tokenlean.replay._formats import load_trajectory
from tokenlean.testing.upstream import FakeUpstream

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("TOKENLEAN_SHARED", ROOT.parent / "shared"))
TRAJECTORY = SHARED / "data/trajectories/openagents_claude_code"
GENEROUS = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def two_proxies(tmp_path: Path) -> Iterator[tuple[FakeUpstream, list[str]]]:
    with FakeUpstream() as upstream:
        processes, urls = [], []
        for _ in ("a", "b"):
            port = _free_port()
            command = [
                sys.executable,
                "-m",
                "tokenlean.cli",
                "proxy",
                "--port",
                str(port),
                "--upstream",
                upstream.url,
                "--originals",  # one volume for both: markers name the files they keep
                str(tmp_path / "originals"),
                "-q",
            ]
            processes.append(subprocess.Popen(command, stderr=subprocess.DEVNULL))
            urls.append(f"http://127.0.0.1:{port}")
        try:
            for url in urls:
                _wait_until_up(url)
            yield upstream, urls
        finally:
            for process in processes:
                process.terminate()
                process.wait(GENEROUS)


def _wait_until_up(url: str) -> None:
    deadline = time.monotonic() + GENEROUS
    while True:
        try:
            httpx.get(url + "/tokenlean/stats", timeout=GENEROUS)
            return
        except httpx.TransportError:
            assert time.monotonic() < deadline, f"the proxy at {url} did not start"
            time.sleep(0.1)


def _without_breakpoints(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_breakpoints(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_breakpoints(v) for v in value]
    return value


@pytest.mark.skipif(not TRAJECTORY.is_dir(), reason="needs ../shared/data/trajectories")
def test_alternating_proxies_send_one_history(two_proxies: tuple[FakeUpstream, list[str]]):
    upstream, urls = two_proxies
    path = min(TRAJECTORY.glob("*.json"), key=lambda p: p.stat().st_size)
    bodies = list(anthropic_requests(load_trajectory(path).messages))[:12]
    assert len(bodies) >= 4
    headers = {"anthropic-version": "2023-06-01", "x-api-key": "k"}
    with httpx.Client(timeout=GENEROUS) as client:
        for n, body in enumerate(bodies):  # a, b, a, b, ...
            client.post(urls[n % 2] + "/v1/messages", json=body, headers=headers)
        for body in bodies:  # the same conversation through one proxy
            client.post(urls[0] + "/v1/messages", json=body, headers=headers)
    sent = [r.body for r in upstream.requests]
    alternating, single = sent[: len(bodies)], sent[len(bodies) :]
    assert alternating == single  # identical bytes, whichever process rewrote them
    histories = [_without_breakpoints(json.loads(b)["messages"]) for b in alternating]
    for earlier, later in itertools.pairwise(histories):
        assert later[: len(earlier)] == earlier  # zero prefix drift
