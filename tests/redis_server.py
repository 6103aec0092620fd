"""A real ``redis-server`` for the tests of originals on Redis: started on a free port of
127.0.0.1 with a private directory and no persistence, stopped afterwards. Tests that need one
skip, saying so, where ``redis-server`` is not installed (Debian: ``apt-get install
redis-server``; ``.ci/run`` installs it) or the ``redis`` package is missing."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

GENEROUS = 60.0


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def client(url: str, password: str | None = None) -> Any:
    """A plain redis-py client, to look at what the store wrote (TTLs, keys, scores)."""
    import redis

    return redis.Redis.from_url(url, password=password)


@contextmanager
def redis_server(
    folder: Path, *, port: int | None = None, password: str | None = None
) -> Iterator[str]:
    """A running ``redis-server``; yields its URL (without the password)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server not installed (apt-get install redis-server)")
    pytest.importorskip(
        "redis", reason="the redis package is missing: pip install 'tokenlean[redis]'"
    )
    port = port or free_port()
    folder.mkdir(parents=True, exist_ok=True)
    command = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    command += ["--dir", str(folder), "--logfile", str(folder / "redis.log")]
    if password is not None:
        command += ["--requirepass", password]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        _wait_until_up(url, password, process)
        yield url
    finally:
        process.terminate()
        process.wait(GENEROUS)


def _wait_until_up(url: str, password: str | None, process: subprocess.Popen[bytes]) -> None:
    import redis

    deadline = time.monotonic() + GENEROUS
    while True:
        try:
            client(url, password).ping()
            return
        except redis.ConnectionError:
            if process.poll() is not None:
                pytest.skip(f"redis-server could not be started (exit {process.returncode})")
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
