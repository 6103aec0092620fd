"""The forwarding of one request: checked, read, rewritten when it is one of the four chat APIs,
sent upstream, and answered with the upstream's answer as it arrives.

What the proxy adds is bounded: a body read within limits (:mod:`tokenlean.proxy._client`), a
502 naming the upstream when it cannot connect within ``connect_timeout`` (504 when it does not
answer in time), and the upstream request dropped as soon as the client goes away, whatever it
was doing then (reading the body, rewriting it, waiting for the upstream's headers, streaming
the answer: :mod:`tokenlean.proxy._answer`): a client that gave up spends nothing more.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from functools import partial

import anyio
import anyio.lowlevel
import anyio.to_thread
import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from tokenlean.proxy._ab import arm_rewriter
from tokenlean.proxy._answer import OnDone, UpstreamResponse
from tokenlean.proxy._client import Gone, read_body, unless_gone
from tokenlean.proxy._counting import CountingThread
from tokenlean.proxy._errors import error_response
from tokenlean.proxy._rewrite import Prepared, Rewriter, begin, prepare, prepare_later
from tokenlean.proxy._routing import (
    api_for,
    forward_headers,
    has_dot_segment,
    mask_key,
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

__all__ = ["LARGE_BODY_BYTES", "Proxy"]

log = logging.getLogger("tokenlean.proxy")

#: The proxy's own header: it names the session, the upstream has no use for it.
_OWN_HEADERS = frozenset({"x-tokenlean-session"})
#: A body this large (about half a million tokens; a cold rewrite takes seconds) is rewritten in
#: the large lane, one at a time, so large bodies never hold the threads small requests use.
LARGE_BODY_BYTES = 2 * 2**20

Headers = Mapping[str, str]


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
        raw = await read_body(request, s.max_body_bytes, s.body_timeout)
        if isinstance(raw, Response):
            return raw
        # From here until the upstream's headers arrive, the client going away cancels it all.
        answer = await unless_gone(request.receive, partial(self._forward, request, raw))
        return Gone() if answer is None else answer

    async def _forward(self, request: Request, raw: bytes, gone: threading.Event) -> Response:
        started = time.perf_counter()
        path = request.url.path
        api = api_for(request.method, path)
        encoding = request.headers.get("content-encoding")
        prepared = (
            None if api is None else await self._prepare(api, raw, encoding, request.headers, gone)
        )
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
        self, api: Api, raw: bytes, encoding: str | None, headers: Headers, gone: threading.Event
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
        # waiting for its lane is dropped when its client leaves (``unless_gone``).
        # A rewritten body stays within the size the client's body was accepted at. A rewrite
        # whose client leaves stops between turns (``gone``, set by ``unless_gone``).
        work = partial(later, gone.is_set)
        limiter = self.large_rewrites if len(raw) >= LARGE_BODY_BYTES else self.rewrites
        prepared = await anyio.to_thread.run_sync(work, limiter=limiter)
        if prepared.cancelled:
            self.stats.cancelled_rewrite()
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
