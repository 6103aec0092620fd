"""Client connections held to a head deadline and to a bound, below the ASGI app.

uvicorn closes a keep-alive connection that stays silent, but once a byte of a request head has
come, nothing bounds how long the rest takes, nor how many connections are open at once: a
client dripping its headers a byte at a time holds a connection for good, and enough half-open
connections use up the process's open files, so that no client is accepted any more, however
valid its token (the guard reads the token from the head, which never completes). Both are
handled here, in subclasses of uvicorn's two HTTP/1.1 protocols: httptools' (a C parser, used
where httptools is installed: the proxy extra installs it) and h11's (pure Python, otherwise).
Parsing and writing HTTP is most of what a re-sent history costs the proxy: a re-sent 54 KB
history costs it 7-15% less CPU with httptools (``benchmarks/proxy_latency.md``). Both hold:

- **a head deadline**: from when a connection opens, and from when each answer on it ends, the
  next request's whole head (request line and headers) must arrive within ``head_timeout``
  seconds, or the connection is closed. The deadline is not reset by each byte. (The body has
  its own deadline, in the app: ``body_timeout``.)
- **a bound**: when a new connection makes more than ``max_connections`` open, the oldest one
  waiting for a request head is closed: it has shown no token yet. A connection with a request
  under way is never shed; when every one has, the new connection is closed instead.
- **a head size**: a request head still incomplete past :data:`MAX_HEAD_BYTES` is answered 400
  and the connection closed (h11 holds this bound itself; httptools would keep every byte).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol

from tokenlean.proxy._settings import ProxySettings

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools is not installed: h11 serves every connection
    HttpToolsProtocol = None  # type: ignore[assignment,misc]  # tested for before any use

__all__ = [
    "MAX_HEAD_BYTES",
    "ClientLimits",
    "LimitedConfig",
    "LimitedH11Protocol",
    "LimitedHttpToolsProtocol",
]

log = logging.getLogger("tokenlean.proxy")

#: The order connections opened in, across the process: the oldest waiting one is shed first.
_OPENED = itertools.count()
#: The most connections the kernel queues and asyncio accepts at once (uvicorn's default).
_BACKLOG = 2048
#: Shedding is logged the first time, then once in this many (a flood would fill the log).
_LOG_EVERY = 1000
#: How many connections this process has shed.
_SHED = itertools.count()
#: How much of a request head (request line and headers) may come while it is incomplete:
#: h11's own default, which every agent CLI's requests have stayed well under.
MAX_HEAD_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class ClientLimits:
    """What :class:`LimitedH11Protocol` holds each connection to (from :class:`ProxySettings`)."""

    head_timeout: float
    max_connections: int

    @classmethod
    def of(cls, settings: ProxySettings) -> ClientLimits:
        return cls(head_timeout=settings.head_timeout, max_connections=settings.max_connections)


class LimitedConfig(Config):
    """uvicorn's configuration with the :class:`ClientLimits` its connections read (it travels
    to each ``--workers`` process as it is, so the limits travel with it)."""

    def __init__(self, app: Any, *, limits: ClientLimits, **options: Any) -> None:
        # asyncio accepts up to ``backlog`` connections at once, before any of them is seen
        # here: uvicorn's 2,048 would use up a 1,024-file limit before one could be shed. As
        # many as the bound keeps the open files under half the limit (the bound is a quarter).
        backlog = min(limits.max_connections, _BACKLOG)
        super().__init__(
            app,
            http=_protocol(),
            backlog=backlog,
            h11_max_incomplete_event_size=MAX_HEAD_BYTES,
            **options,
        )
        self.limits = limits


def _protocol() -> type[_Limited]:
    """httptools' protocol where httptools is installed, else h11's."""
    return LimitedH11Protocol if LimitedHttpToolsProtocol is None else LimitedHttpToolsProtocol


# The mix-ins' hooks call the parser's protocol after them in the method order: to the type
# checker each is that protocol.
if TYPE_CHECKING:
    _H11 = H11Protocol
    _HttpTools = HttpToolsProtocol
else:
    _H11 = _HttpTools = object


class _Limited(_H11):
    """A head deadline and a bound on open connections, for either parser's protocol."""

    _order = -1
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]  # as uvicorn's own
        super().connection_made(transport)
        self._order = next(_OPENED)
        config = self.config
        self.limits = config.limits if isinstance(config, LimitedConfig) else _default_limits()
        self._start_head_clock()
        self._shed()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._start_head_clock()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_clock()
        super().connection_lost(exc)

    def waiting(self) -> bool:
        """Whether no request is under way: the connection waits for a request head."""
        return self.cycle is None or self.cycle.response_complete

    def _start_head_clock(self) -> None:
        self._stop_head_clock()
        self._head_timer = self.loop.call_later(self.limits.head_timeout, self._head_late)

    def _stop_head_clock(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        # A head that completed started a request (no longer waiting); one whose answer ended
        # since restarted this clock: still waiting here means no whole head came in time.
        self._head_timer = None
        if self.waiting() and not self.transport.is_closing():
            log.debug("tokenlean proxy: closed a connection with no request head in time")
            self.transport.close()

    def _shed(self) -> None:
        """At the bound, close the oldest connection waiting for a head (or this one)."""
        live = [c for c in self.connections if not c.transport.is_closing()]
        if len(live) <= self.limits.max_connections:
            return
        waiting = [c for c in live if isinstance(c, _Limited) and c is not self and c.waiting()]
        victim = min(waiting, key=lambda c: c._order, default=self)
        shed = next(_SHED)
        if shed % _LOG_EVERY == 0:
            log.warning(
                "tokenlean proxy: %d client connections open (max_connections); closing the "
                "oldest waiting for a request head (%d closed so far)",
                len(live),
                shed + 1,
            )
        victim.transport.close()


class LimitedH11Protocol(_Limited, H11Protocol):
    """uvicorn's h11 protocol with a head deadline and a bound on open connections."""


class _HeadSize(_HttpTools):
    """A bound on an incomplete request head, for httptools' protocol, as h11 holds one itself:
    past :data:`MAX_HEAD_BYTES` read after the read the head began in (that one, at most
    256 KiB, may hold the end of an earlier request too), the head is refused. httptools
    gathers each header before it hands it over, so only counting what arrives bounds what an
    endless header costs."""

    _read = 0  # what was read after the current head's first read, while it is incomplete
    _in_head = False  # a head began and has not ended

    def data_received(self, data: bytes) -> None:
        within = self._in_head  # a head under way: all of this is head until it ends
        super().data_received(data)
        if within and self._in_head and not self.transport.is_closing():
            self._read += len(data)
            if self._read > MAX_HEAD_BYTES:
                log.debug("tokenlean proxy: refused a request head over %d bytes", MAX_HEAD_BYTES)
                self.send_400_response("Invalid HTTP request received.")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._read, self._in_head = 0, True

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()


if HttpToolsProtocol is None:
    LimitedHttpToolsProtocol: type[_Limited] | None = None
else:
    # the mix-ins are typed against two protocols whose attributes differ; their hooks agree
    class LimitedHttpToolsProtocol(_Limited, _HeadSize, HttpToolsProtocol):  # type: ignore[misc,no-redef]
        """uvicorn's httptools protocol with a head deadline, a bound on open connections, and
        a bound on a request head's size."""


def _default_limits() -> ClientLimits:
    """The defaults, for a server started with uvicorn's own configuration."""
    return ClientLimits.of(ProxySettings())
