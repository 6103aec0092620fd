"""``tokenlean proxy --workers N``: N processes serve one port, and whichever forwards a
request, the same history reaches the upstream as the same bytes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import log_turn, wait_for

GENEROUS = 60.0
BODY: dict[str, Any] = log_turn("m", "t0")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[tuple[FakeUpstream, str, subprocess.Popen[bytes]]]:
    with FakeUpstream() as upstream:
        port = _free_port()
        command = [sys.executable, "-m", "tokenlean.cli", "proxy", "--port", str(port)]
        command += ["--upstream", upstream.url, "--originals", str(tmp_path), "--workers", "2"]
        process = subprocess.Popen([*command, "-q"], stderr=subprocess.PIPE)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + GENEROUS
            while True:
                try:
                    httpx.get(url + "/tokenlean/stats", timeout=GENEROUS)
                    break
                except httpx.TransportError:
                    assert process.poll() is None, process.communicate()[1].decode()
                    assert time.monotonic() < deadline, "the proxy did not start"
                    time.sleep(0.1)
            yield upstream, url, process
        finally:
            children = _children(process.pid)
            process.terminate()
            process.wait(GENEROUS)
            # the workers stop with their parent
            assert wait_for(lambda: not any(Path(f"/proc/{c}").exists() for c in children))


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="counts processes in /proc")
def test_workers_serve_one_port_from_several_processes_with_the_same_bytes(
    workers: tuple[FakeUpstream, str, subprocess.Popen[bytes]],
):
    upstream, url, process = workers
    assert wait_for(lambda: len(_children(process.pid)) >= 2, GENEROUS)
    content = json.dumps(BODY).encode()
    for _ in range(20):  # a new connection each: the kernel spreads them over the workers
        reply = httpx.post(url + "/v1/messages", content=content, timeout=GENEROUS)
        assert reply.status_code == 200
    sent = {r.body for r in upstream.requests}
    assert len(upstream.requests) == 20 and len(sent) == 1
    assert len(next(iter(sent))) < len(content)  # rewritten, by whichever worker


def test_workers_must_be_at_least_one():
    command = [sys.executable, "-m", "tokenlean.cli", "proxy", "--workers", "0"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=GENEROUS)
    assert done.returncode == 2 and "--workers" in done.stderr
