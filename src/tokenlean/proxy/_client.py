"""The client's side of one request: its body read within bounds, and its leaving noticed.

The proxy reads at most ``max_body_bytes`` (413 above) and waits at most ``body_timeout`` for
the whole body (408; the deadline of the request head is the connection's,
:mod:`tokenlean.proxy._connections`). A client that goes away cancels whatever is done for it
(:func:`unless_gone`); what it is then answered is :class:`Gone`, nothing.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import anyio
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from tokenlean.proxy._errors import error_response

__all__ = ["Gone", "read_body", "unless_gone", "watching"]

log = logging.getLogger("tokenlean.proxy")

T = TypeVar("T")


async def watch_disconnect(
    receive: Receive, scope: anyio.CancelScope, gone: threading.Event | None = None
) -> None:
    """Cancel ``scope`` (and set ``gone``) once the client has disconnected."""
    while (await receive())["type"] != "http.disconnect":
        pass
    if gone is not None:
        gone.set()
    scope.cancel()


@contextmanager
def watching(receive: Receive, gone: threading.Event | None = None) -> Iterator[None]:
    """A block the client leaving cancels (``gone`` set first, for a thread working for it).

    The watch is a bare task cancelled when the block ends, not a task group: a task group's
    cancel formats its task's repr, about a tenth of a millisecond per request for nothing.
    """
    with anyio.CancelScope() as scope:
        watcher = asyncio.ensure_future(watch_disconnect(receive, scope, gone))
        try:
            yield
        finally:
            watcher.cancel()


async def unless_gone(
    receive: Receive, work: Callable[[threading.Event], Awaitable[T]]
) -> T | None:
    """What ``work(gone)`` returns, or None when the client disconnected first (``work`` is
    then cancelled: an upstream request it was waiting on is closed). ``gone`` is set when
    the client has left, or ``work`` ended some other way (a thread it waits on can stop).
    ``work`` must not raise."""
    gone = threading.Event()
    done: list[T] = []
    try:
        with watching(receive, gone):
            done.append(await work(gone))
    finally:
        gone.set()
    return done[0] if done else None


class Gone(Response):
    """The answer to a client that has gone: nothing (the server has no one to send it to)."""

    def __init__(self) -> None:
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        log.debug("tokenlean proxy: the client left before the answer; nothing sent upstream")


async def read_body(request: Request, limit: int, timeout: float) -> bytes | Response:
    """The request body, or the answer when it cannot be read: 413 when it is larger than
    ``limit`` bytes, 408 when it did not all come within ``timeout`` seconds, nothing when the
    client left."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return error_response(413, "request_too_large", f"body over {limit:,} bytes")
    chunks: list[bytes] = []
    size = 0
    stream = request.stream()
    try:
        # One deadline for the whole body: restarted by each chunk, it would let a client
        # dripping a byte at a time hold the connection for good.
        with anyio.fail_after(timeout):
            while (chunk := await anext(stream, None)) is not None:
                size += len(chunk)
                if size > limit:
                    return error_response(413, "request_too_large", f"body over {limit:,} bytes")
                chunks.append(chunk)
        return b"".join(chunks)
    except TimeoutError:
        message = f"the request body did not all come within {timeout:g} s"
        # The rest of the body may still come: only a new connection starts a clean request.
        return error_response(408, "request_timeout", message, {"connection": "close"})
    except ClientDisconnect:
        return Gone()
