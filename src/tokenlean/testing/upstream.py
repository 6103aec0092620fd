"""A fake provider for testing agents, the proxy or the SDK wrappers: a real HTTP server on
127.0.0.1 that records every request and answers from a script (JSON, server-sent events, errors).

Standard library only (no extra, not even the proxy's), so it can stand in for Anthropic,
OpenAI or Gemini behind the proxy, or in front of an SDK directly when a benchmark compares the
two::

    with FakeUpstream() as upstream:            # answers each API with a canned reply
        app = create_app(ProxySettings(upstream=upstream.url))
        ...
        upstream.requests[-1].json()            # the body the provider would have received

A script is a function from the recorded request to a :class:`Reply`; a reply's body is bytes,
or an iterable of chunks sent (and flushed) one by one as it yields them.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tokenlean.testing._canned import (
    CHAT_USAGE,
    anthropic_events,
    anthropic_message,
    canned,
    chat_completion,
    chat_events,
    gemini_events,
    gemini_response,
    response_events,
    response_item_events,
    response_object,
)
from tokenlean.testing._replies import (
    Recorded,
    Reply,
    Script,
    json_reply,
    sse_event,
    sse_reply,
)

__all__ = [
    "CHAT_USAGE",
    "FakeUpstream",
    "Recorded",
    "Reply",
    "Script",
    "anthropic_events",
    "anthropic_message",
    "canned",
    "chat_completion",
    "chat_events",
    "gemini_events",
    "gemini_response",
    "json_reply",
    "response_events",
    "response_item_events",
    "response_object",
    "sse_event",
    "sse_reply",
]


# --- the server --------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; with Nagle's algorithm on, the body would wait
    # for the client's delayed ACK (40 ms), which a latency benchmark must not measure.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read the record
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        headers = [(k.lower(), v) for k, v in self.headers.items()]
        request = Recorded(self.command, parts.path, parts.query, headers, body)
        fake = self.server.fake
        fake.record(request)
        reply = fake.script(request)
        if reply.delay and self._client_left_within(reply.delay):
            fake.abandoned.append(request)
            self.close_connection = True
            return
        if self._send(reply):
            fake.answered.append(request)

    def _client_left_within(self, seconds: float) -> bool:
        """Wait ``seconds``; True as soon as the client closes its end of the connection."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([self.connection], [], [], left)
            if readable:
                if not self.connection.recv(1, socket.MSG_PEEK):
                    return True
                time.sleep(left)  # a pipelined request, not a close: just wait
        return False

    def _send(self, reply: Reply) -> bool:
        """Send ``reply``; False when the client had gone before all of it was written."""
        self.send_response(reply.status)
        for key, value in reply.headers:
            self.send_header(key, value)
        if isinstance(reply.body, bytes):
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            try:
                self.wfile.write(reply.body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
                return False
            return True
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for chunk in reply.body:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.server.fake.disconnected.set()
            self.close_connection = True
            return False
        return True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeUpstream


@dataclass
class FakeUpstream:
    """The fake provider; a context manager that serves it on a free port of 127.0.0.1."""

    script: Script = canned
    requests: list[Recorded] = field(default_factory=list)
    #: Set when a streamed reply could not be written because the client had gone.
    disconnected: threading.Event = field(default_factory=threading.Event)
    #: Requests whose reply was written in full, and those whose client left during the delay.
    answered: list[Recorded] = field(default_factory=list)
    abandoned: list[Recorded] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def _serve(self) -> None:
        self._server.serve_forever(poll_interval=0.05)

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def bodies(self, path: str) -> Iterator[Any]:
        """The JSON bodies received on ``path``, oldest first."""
        return (r.json() for r in list(self.requests) if r.path == path)

    def __enter__(self) -> FakeUpstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
