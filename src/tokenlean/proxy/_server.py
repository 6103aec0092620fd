"""Running the proxy: in the foreground (``tokenlean proxy``, in one process or several), or on a
thread (``tokenlean wrap``, tests, notebooks), on a port of your choice or a free one."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import signal
import socket
import threading
from types import FrameType, TracebackType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from uvicorn.supervisors import Multiprocess

from tokenlean import checks
from tokenlean.proxy._connections import ClientLimits, LimitedConfig
from tokenlean.proxy._guard import check_listen
from tokenlean.proxy._settings import ProxySettings

__all__ = ["START_TIMEOUT", "TICK_SECONDS", "BackgroundProxy", "bind", "serve", "serve_workers"]

#: How long to wait for the server thread to come up or go down before giving up.
START_TIMEOUT = 10.0
#: How often an idle server wakes for its chores (seconds). uvicorn's own loop wakes ten times a
#: second, which cost an idle proxy about 2.3 ms of CPU a second here: more than a re-sent
#: history costs it per request when an agent waits a few seconds for its model between them.
TICK_SECONDS = 1.0


class _Server(uvicorn.Server):
    """uvicorn's server, waking once every :data:`TICK_SECONDS` instead of ten times a second,
    and at once when told to stop (:meth:`stop`, or a signal)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    async def main_loop(self) -> None:
        self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 10) % 864_000  # a multiple of 10: its once-a-second chores
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), TICK_SECONDS)

    def stop(self) -> None:
        """Stop serving; safe from any thread and from a signal handler."""
        self.should_exit = True
        self._wake_up()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._wake_up()

    def _wake_up(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing to wake
                loop.call_soon_threadsafe(wake.set)


def _config(
    app: Starlette | str, *, access_log: bool, workers: int = 1, settings: ProxySettings | None
) -> uvicorn.Config:
    # The upstream's own Date and Server headers pass through; uvicorn's would duplicate them.
    return LimitedConfig(
        app,
        limits=ClientLimits.of(settings or ProxySettings()),
        factory=isinstance(app, str),
        workers=workers,
        log_config=None,
        access_log=access_log,
        server_header=False,
        date_header=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )


def _settings(app: Starlette) -> ProxySettings | None:
    """The settings of an app of :func:`create_app` (another app: None, the defaults apply)."""
    settings = getattr(app.state, "settings", None)
    return settings if isinstance(settings, ProxySettings) else None


def _check(app: Starlette, host: str) -> None:
    """An app of :func:`create_app` listens beyond loopback only with a token (ValueError)."""
    settings = _settings(app)
    if settings is not None:
        check_listen(host, settings)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; port 0 picks a free one (read it back with ``getsockname``)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named explicitly: asyncio turns Nagle's algorithm off only on sockets that say
    # so, and with it on, the end of each reply waits for the client's delayed ACK (~40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def serve(app: Starlette, host: str, port: int) -> None:
    """Serve in the foreground until SIGINT or SIGTERM, then return (to print the summary).

    uvicorn shuts down gracefully on either signal and then re-raises it; both are made to
    raise KeyboardInterrupt here, so that a ``kill`` ends the proxy as cleanly as Ctrl-C.
    """
    _check(app, host)
    sock = bind(host, port)
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        _Server(_config(app, access_log=False, settings=_settings(app))).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()


def serve_workers(
    factory: str, host: str, port: int, workers: int, *, settings: ProxySettings | None = None
) -> None:
    """Serve ``workers`` processes on one listening socket until SIGINT or SIGTERM; each holds
    its client connections to the limits of ``settings`` (the defaults when None).

    ``factory`` names a function (``module:function``) each worker calls to build its app: an
    app cannot travel to a new process, the instructions to build one can. The kernel spreads
    connections over the workers; each has its own statistics and rewrite threads (summed in
    their scrapes when their settings share a ``workers_dir``), and all of them write the same
    bytes for the same history (the rewrite is a pure function of it).
    """
    checks.integer(workers, "workers", at_least=2, wanted="at least 2 to run several processes")
    sock = bind(host, port)
    config = _config(factory, access_log=False, workers=workers, settings=settings)
    try:
        _supervisor(config, sock).run()
    finally:
        sock.close()


def _supervisor(config: uvicorn.Config, sock: socket.socket) -> Multiprocess:
    # Older uvicorn releases take the worker's target; newer ones build the server themselves.
    if "target" in inspect.signature(Multiprocess).parameters:
        old: Any = Multiprocess
        return old(config, target=_Server(config).run, sockets=[sock])  # type: ignore[no-any-return]
    return Multiprocess(config, sockets=[sock])


class BackgroundProxy:
    """The proxy on a daemon thread; a context manager that starts and stops it.

    ``url`` is its base URL (``http://127.0.0.1:PORT``) once started.
    """

    def __init__(self, app: Starlette, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app = app
        _check(app, host)
        self._sock = bind(host, port)
        self._server = _Server(_config(app, access_log=False, settings=_settings(app)))
        self._thread = threading.Thread(target=self._run, name="tokenlean-proxy", daemon=True)
        bound: Any = self._sock.getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        self.url = f"http://{shown}:{bound[1]}"
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            self._server.run(sockets=[self._sock])
        except BaseException as exc:  # reported by start(); a thread has no one else to tell
            self.error = exc

    def start(self) -> BackgroundProxy:
        self._thread.start()
        waited = 0.0
        while not self._server.started and self._thread.is_alive() and waited < START_TIMEOUT:
            threading.Event().wait(0.01)
            waited += 0.01
        if not self._server.started:
            self.stop()
            raise RuntimeError(f"the tokenlean proxy did not start: {self.error!r}")
        return self

    def stop(self) -> None:
        self._server.stop()
        self._thread.join(START_TIMEOUT)
        self._sock.close()

    def __enter__(self) -> BackgroundProxy:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
