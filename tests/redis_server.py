"""A real ``redis-server`` for the tests of originals on Redis: started on a free port of
127.0.0.1 with a private directory and no persistence, stopped afterwards. Tests that need one
skip, saying so, where ``redis-server`` is not installed (Debian: ``apt-get install
redis-server``; ``.ci/run`` installs it) or the ``redis`` package is missing."""

from __future__ import annotations

import contextlib
import select
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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
def monitored(url: str) -> Iterator[list[str]]:
    """The commands the server runs while the block runs, scripts' own included (``MONITOR``,
    its lines as the server prints them: ``... [0 lua] "ZRANGE" "key" "0" "15" ...``); the list
    is filled when the block ends. ``url``: a plain ``redis://`` server without a password."""
    address = urlsplit(url)
    end = f"tokenlean-monitor-end-{time.monotonic_ns()}"
    lines: list[str] = []
    with socket.create_connection((address.hostname, address.port), timeout=GENEROUS) as sock:
        sock.sendall(b"MONITOR\r\n")
        said = sock.makefile("rb")
        assert said.readline().strip() == b"+OK"
        yield lines
        client(url).echo(end)  # the last line to read: every command before it was printed
        for raw in said:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if end in line:
                break
            lines.append(line)


class RoundTrips:
    """A relay on 127.0.0.1 in front of a plain ``redis://`` server that counts its clients'
    round trips. A client sends a request (one command, or a pipeline of many, which a client
    may write in several pieces) and waits for the answer before it sends again, so what it
    sends without a pause of :data:`PAUSE` seconds is one round trip: the relay gathers it and
    forwards it whole, so the server answers none of it before it all arrived. ``url`` is the
    relay's; :attr:`count` the round trips so far."""

    PAUSE = 0.05

    def __init__(self, url: str) -> None:
        target = urlsplit(url)
        self._target = (target.hostname or "127.0.0.1", target.port or 6379)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self._listener.getsockname()[1]}{target.path}"
        self.count = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> RoundTrips:
        return self

    def __exit__(self, *exc: object) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client_side, _ = self._listener.accept()
            except OSError:  # closed
                return
            server_side = socket.create_connection(self._target, timeout=GENEROUS)
            for source, sink, asks in (
                (client_side, server_side, True),
                (server_side, client_side, False),
            ):
                threading.Thread(target=self._pump, args=(source, sink, asks), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, asks: bool) -> None:
        try:
            while data := source.recv(65536):
                if asks:
                    data += self._rest_of_request(source)
                    with self._lock:
                        self.count += 1
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

    def _rest_of_request(self, source: socket.socket) -> bytes:
        """What the client sends on without a pause (the rest of a pipeline)."""
        more = b""
        while select.select([source], [], [], self.PAUSE)[0]:
            piece = source.recv(65536)
            if not piece:
                break
            more += piece
        return more


def tls_files(folder: Path) -> list[str]:
    """A certificate authority made for the test, and a certificate of 127.0.0.1 it signed:
    the server's TLS options (its CA file is ``folder / "ca.pem"``)."""
    trustme = pytest.importorskip(
        "trustme", reason="the TLS tests make their certificates with trustme (the dev extra)"
    )
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    cert.private_key_pem.write_to_path(str(folder / "key.pem"))
    cert.cert_chain_pems[0].write_to_path(str(folder / "cert.pem"))
    return [
        *("--tls-cert-file", str(folder / "cert.pem"), "--tls-key-file", str(folder / "key.pem")),
        *("--tls-ca-cert-file", str(folder / "ca.pem"), "--tls-auth-clients", "no"),
    ]


@contextmanager
def redis_server(
    folder: Path, *, port: int | None = None, password: str | None = None, tls: bool = False
) -> Iterator[str]:
    """A running ``redis-server``; yields its URL (without the password). With ``tls``, it
    listens only for TLS, and the URL is ``rediss://`` naming the CA that signed its
    certificate (``?ssl_ca_certs=``, which redis-py takes from the URL)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server not installed (apt-get install redis-server)")
    pytest.importorskip(
        "redis", reason="the redis package is missing: pip install 'tokenlean[redis]'"
    )
    port = port or free_port()
    folder.mkdir(parents=True, exist_ok=True)
    listen = ["--port", "0", "--tls-port", str(port), *tls_files(folder)] if tls else []
    command = [
        binary,
        *(listen or ["--port", str(port)]),
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
    with (folder / "redis.err").open("wb") as err:  # where a refused option is said
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
    url = f"redis://127.0.0.1:{port}/0"
    if tls:
        url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={folder / 'ca.pem'}"
    try:
        _wait_until_up(url, password, process, folder)
        yield url
    finally:
        process.terminate()
        process.wait(GENEROUS)


def _why(process: subprocess.Popen[bytes], folder: Path, url: str) -> str:
    """Why a server exited at once; a TLS server refused by a build without TLS says so."""
    said = (folder / "redis.err").read_text(errors="replace").strip().splitlines()
    if url.startswith("rediss://") and any("tls" in line.lower() for line in said):
        return "this redis-server has no TLS support: " + said[-1]
    return f"exit {process.returncode}" + (f": {said[-1]}" if said else "")


def _wait_until_up(
    url: str, password: str | None, process: subprocess.Popen[bytes], folder: Path
) -> None:
    import redis

    deadline = time.monotonic() + GENEROUS
    while True:
        try:
            client(url, password).ping()
            return
        except redis.ConnectionError:
            if process.poll() is not None:
                pytest.skip(f"redis-server could not be started ({_why(process, folder, url)})")
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
