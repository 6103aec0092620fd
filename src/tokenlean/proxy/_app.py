"""The proxy as an ASGI app: forward every request, rewrite the bodies of the four chat APIs.

Responses (JSON, server-sent events, errors) go back byte for byte as they arrive, with the
upstream's status and headers. What the proxy adds is bounded: it reads at most
``max_body_bytes`` (413 above) and waits at most ``body_timeout`` for the whole body (408; the
deadline of the request head is the connection's, :mod:`tokenlean.proxy._connections`),
gives a 502 naming the upstream when it cannot connect within ``connect_timeout``, and drops the
upstream request as soon as the client goes away, whatever it was doing then (reading the body,
rewriting it, waiting for the upstream's headers, streaming the answer): a client that gave up
spends nothing more.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from typing import Literal, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread
import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tokenlean.proxy._ab import arm_rewriter
from tokenlean.proxy._arms import ArmBook
from tokenlean.proxy._counting import CountingThread
from tokenlean.proxy._errors import error_response
from tokenlean.proxy._guard import Guard, authorized
from tokenlean.proxy._metrics import metrics_route
from tokenlean.proxy._rewrite import (
    OwnRewriter,
    Prepared,
    Rewriter,
    begin,
    default_rewriter,
    prepare,
    prepare_later,
)
from tokenlean.proxy._routing import (
    api_for,
    forward_headers,
    has_dot_segment,
    mask_key,
    response_headers,
    upstream_base,
    upstream_url,
    vendor_for,
)
from tokenlean.proxy._settings import ProxySettings
from tokenlean.proxy._stats import StatsBook
from tokenlean.proxy._upstream import Upstream
from tokenlean.proxy._usage import AnswerReader, answer_reader
from tokenlean.proxy._workers import SharedFigures
from tokenlean.raw import Api

log = logging.getLogger("tokenlean.proxy")

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
#: The proxy's own header: it names the session, the upstream has no use for it.
_OWN_HEADERS = frozenset({"x-tokenlean-session"})
#: A body this large (about half a million tokens; a cold rewrite takes seconds) is rewritten in
#: the large lane, one at a time, so large bodies never hold the threads small requests use.
LARGE_BODY_BYTES = 2 * 2**20

OnDone = Callable[[int], None]
Headers = Mapping[str, str]
T = TypeVar("T")


class UpstreamResponse(Response):
    """Passes the upstream response on as it arrives; closes it whatever happens to the client."""

    def __init__(
        self, upstream: httpx.Response, on_done: OnDone, reader: AnswerReader | None = None
    ) -> None:
        self.upstream = upstream
        self.on_done = on_done
        self.reader = reader  # reads the answer's usage, each chunk after the client has it
        self.status_code = upstream.status_code
        self.raw_headers = response_headers(upstream.headers.raw)
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_watch_disconnect, receive, group.cancel_scope)
                await self._pump(send)
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self.upstream.aclose()
            self.on_done(self.status_code)

    async def _pump(self, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        try:
            async for chunk in self.upstream.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if self.reader is not None:
                    self.reader.feed(chunk)
        except httpx.HTTPError as exc:
            # Ending normally would hand the client a truncated body as if it were whole; leaving
            # the response incomplete makes the server drop the connection, which the client sees.
            log.warning("tokenlean proxy: upstream failed mid-response: %s", mask_key(repr(exc)))
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _watch_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


async def _unless_gone(receive: Receive, work: Callable[[], Awaitable[T]]) -> T | None:
    """What ``work`` returns, or None when the client disconnected first (``work`` is then
    cancelled: an upstream request it was waiting on is closed). ``work`` must not raise."""
    done: list[T] = []
    async with anyio.create_task_group() as group:
        group.start_soon(_watch_disconnect, receive, group.cancel_scope)
        done.append(await work())
        group.cancel_scope.cancel()
    return done[0] if done else None


async def _set_when_cancelled(
    gone: threading.Event, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Set ``gone`` when the task group is cancelled: the thread it waits on cannot be."""
    try:
        task_status.started()
        await anyio.sleep_forever()
    finally:
        gone.set()


class _Gone(Response):
    """The answer to a client that has gone: nothing (the server has no one to send it to)."""

    def __init__(self) -> None:
        self.background = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        log.debug("tokenlean proxy: the client left before the answer; nothing sent upstream")


async def _read_body(request: Request, limit: int, timeout: float) -> bytes | Response:
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
        return _Gone()


class Proxy:
    """The request handler and the state it shares across requests."""

    def __init__(
        self,
        settings: ProxySettings,
        rewriter: Rewriter | None,
        stats: StatsBook,
        *,
        inline: bool = False,
    ):
        self.settings = settings
        self.rewriter = rewriter
        # Whether small rewrites may run on the event loop: only tokenlean's own rewriter with
        # originals in a folder is known never to wait on anything (a network store, a rewriter
        # given by an embedder might).
        self.inline = inline
        self.stats = stats
        self.upstream: Upstream | None = None
        self.counting: CountingThread | None = None
        self.figures = SharedFigures(stats, settings.workers_dir)  # summed over --workers
        self.rewrites: anyio.CapacityLimiter | None = None
        self.large_rewrites: anyio.CapacityLimiter | None = None

    def open(self) -> Upstream:
        """The upstream pool and the rewrite threads' limiters (made on the app's event loop)."""
        s = self.settings
        self.upstream = Upstream(read_timeout=s.read_timeout, connect_timeout=s.connect_timeout)
        self.rewrites = anyio.CapacityLimiter(s.rewrite_threads)
        self.large_rewrites = anyio.CapacityLimiter(1)
        return self.upstream

    async def handle(self, request: Request) -> Response:
        s = self.settings
        raw_path = request.scope.get("raw_path") or request.url.path.encode()
        if has_dot_segment(raw_path.decode("latin-1")):
            message = "a path with a '.' or '..' segment (written or percent-encoded) is refused"
            return error_response(400, "invalid_request_error", message)
        raw = await _read_body(request, s.max_body_bytes, s.body_timeout)
        if isinstance(raw, Response):
            return raw
        # From here until the upstream's headers arrive, the client going away cancels it all.
        answer = await _unless_gone(request.receive, partial(self._forward, request, raw))
        return _Gone() if answer is None else answer

    async def _forward(self, request: Request, raw: bytes) -> Response:
        started = time.perf_counter()
        path = request.url.path
        api = api_for(request.method, path)
        encoding = request.headers.get("content-encoding")
        prepared = None if api is None else await self._prepare(api, raw, encoding, request.headers)
        content = raw if prepared is None else prepared.content
        vendor = vendor_for(path, request.headers, request.url.query)
        base = upstream_base(self.settings, vendor)
        raw_path = request.scope.get("raw_path", path.encode()).decode("latin-1")
        url = upstream_url(base, raw_path, request.url.query)
        # A rewrite stops between turns when its client leaves (it holds one of the bounded
        # threads until then): a client that left meanwhile is noticed here, before anything
        # goes upstream.
        await anyio.lowlevel.checkpoint()
        try:
            upstream = await self._send(request, url, content)
        except httpx.HTTPError as exc:
            return self._unreachable(base, exc)
        headers = dict(request.headers)
        reader = None if api is None else answer_reader(api, upstream.status_code, upstream.headers)
        on_done = self._recorder(request.method, path, api, headers, prepared, reader, started)
        return UpstreamResponse(upstream, on_done, reader)

    def _rewriter_for(self, headers: Headers) -> Rewriter | None:
        """The rewriter of one request: in an A/B test, none for a control session's."""
        arms, s = self.stats.arms, self.settings
        if self.rewriter is None or arms is None:
            return self.rewriter
        salt = s.session_salt.encode()
        return arm_rewriter(self.rewriter, headers, share=arms.share, salt=salt)

    async def _prepare(
        self, api: Api, raw: bytes, encoding: str | None, headers: Headers
    ) -> Prepared:
        rewriter = self._rewriter_for(headers)
        if rewriter is None:  # nothing to do on the request's path
            return prepare(None, api, raw)
        limit = self.settings.max_body_bytes
        if rewriter is self.rewriter and self.inline:
            # A small body that brings little new is done here, on the event loop (the rest of
            # it is a memo hit): handing it to a thread and back would cost more.
            later = begin(rewriter, api, raw, encoding=encoding, limit=limit)
            if isinstance(later, Prepared):
                return later
        else:
            later = partial(prepare_later, rewriter, api, raw, encoding, limit)
        # Off the event loop, so parsing and rewriting a long history stalls no other stream;
        # several at once, so a small request never waits for a large one's rewrite to end, and
        # large bodies in a lane of their own, so two of them cannot take every thread. One
        # waiting for its lane is dropped when its client leaves (``_unless_gone``).
        # A rewritten body stays within the size the client's body was accepted at. A rewrite
        # whose client leaves stops between turns (``gone``, set when this task is cancelled).
        gone = threading.Event()
        work = partial(later, gone.is_set)
        limiter = self.large_rewrites if len(raw) >= LARGE_BODY_BYTES else self.rewrites
        async with anyio.create_task_group() as group:
            await group.start(_set_when_cancelled, gone)
            prepared = await anyio.to_thread.run_sync(work, limiter=limiter)
            if prepared.cancelled:
                self.stats.cancelled_rewrite()
            group.cancel_scope.cancel()
        return prepared

    async def _send(self, request: Request, url: str, content: bytes) -> httpx.Response:
        assert self.upstream is not None, "the app's lifespan opens the upstream pool"
        sent = forward_headers(request.headers.raw, _OWN_HEADERS)
        return await self.upstream.send(request.method, url, sent, content)

    def _unreachable(self, base: str, exc: httpx.HTTPError) -> JSONResponse:
        base = mask_key(base)  # an upstream URL may carry credentials (user:secret@)
        if isinstance(exc, httpx.ReadTimeout | httpx.WriteTimeout):
            message = f"upstream {base} did not answer in time ({type(exc).__name__})"
            return error_response(504, "upstream_timeout", message)
        detail = mask_key(str(exc) or type(exc).__name__)
        log.warning("tokenlean proxy: upstream %s unreachable: %s", base, detail)
        message = f"tokenlean proxy could not reach upstream {base}: {detail}"
        return error_response(502, "upstream_unreachable", message)

    def _recorder(
        self,
        method: str,
        path: str,
        api: Api | None,
        headers: Mapping[str, str],
        prepared: Prepared | None,
        reader: AnswerReader | None,
        started: float,
    ) -> OnDone:
        def on_done(status: int) -> None:
            if api is None or prepared is None:
                log.debug("%s %s %d passed through", method, path, status)
            elif self.counting is not None:
                seconds = time.perf_counter() - started
                self.counting.submit(method, path, api, headers, prepared, status, reader, seconds)

        return on_done

    async def stats_endpoint(self, request: Request) -> Response:
        """Every session for a request with the token; otherwise only the session it names."""
        # Off the event loop: with --workers, it reads and writes the workers' files.
        if authorized(request.scope):
            return JSONResponse(await anyio.to_thread.run_sync(self.figures.snapshot))
        named = request.headers.get("x-tokenlean-session")
        if not named:
            message = (
                "every session's statistics need the proxy's token (--token); a client sees "
                "its own session's with the header x-tokenlean-session: <its session id>"
            )
            return error_response(403, "permission_error", message)
        return JSONResponse(await anyio.to_thread.run_sync(self.figures.snapshot, named))


def _arm_book(settings: ProxySettings) -> ArmBook | None:
    if settings.ab_share is None:
        return None
    return ArmBook(
        settings.ab_share,
        settings.ab_log,
        idle=settings.ab_idle,
        max_sessions=settings.max_sessions,
    )


def create_app(
    settings: ProxySettings | None = None,
    *,
    rewriter: Rewriter | Literal["default"] | None = "default",
) -> Starlette:
    """The proxy app. ``rewriter``: the default is ``tokenlean.raw``'s rewrite; None forwards
    every body unchanged; a callable replaces it (tests, embedders; it must be thread-safe, as
    up to ``settings.rewrite_threads`` requests are rewritten at once).

    ``app.state.stats`` is the :class:`StatsBook` behind ``GET /tokenlean/stats``.
    """
    settings = settings or ProxySettings()
    if isinstance(rewriter, str):
        rewriter = default_rewriter(
            settings.originals_dir,
            originals_url=settings.originals_url,
            max_bytes=settings.originals_max_bytes,
            max_age=settings.originals_max_age,
        )
    stats = StatsBook(
        settings.pricing(),
        max_sessions=settings.max_sessions,
        salt=settings.session_salt.encode(),
        by_model=settings.price_by_model,
        output_price=settings.output_price,
        arms=_arm_book(settings),
    )
    inline = isinstance(rewriter, OwnRewriter) and rewriter.local
    proxy = Proxy(settings, rewriter, stats, inline=inline)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        proxy.counting = CountingThread(stats, after=proxy.figures.write)
        try:
            async with proxy.open():
                yield
        finally:  # every answered request is counted before the summary is read
            proxy.counting.close()
            if stats.arms is not None:  # the sessions still open are finished: logged
                stats.arms.close()

    app = Starlette(
        routes=[
            Route("/tokenlean/stats", proxy.stats_endpoint, methods=["GET"]),
            metrics_route(proxy.figures.exposition),
            Route("/{path:path}", proxy.handle, methods=_METHODS),
        ],
        middleware=[Middleware(Guard, settings=settings)],  # in front of every route
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.stats = stats
    app.state.rewriting = rewriter is not None
    app.state.inline_rewrites = inline  # small rewrites on the event loop (Proxy.inline)
    return app
