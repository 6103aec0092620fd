"""Sending a request upstream, with as little work per request as the HTTP client allows.

``httpx.AsyncClient.send`` spends most of the proxy's own time on a re-sent history: it parses
the URL again, merges default headers and cookies, walks auth and redirect hooks, and stores the
upstream's cookies in a jar every later request (of any client) would then carry. The proxy
needs none of that: it forwards the client's headers as they came and never follows a redirect.
So a request goes straight to an ``httpx.AsyncHTTPTransport`` (the pool the client itself would
use, with the client's limits), the URL parsed once per distinct URL, and no cookie is kept.

When the environment names an HTTP proxy (``HTTPS_PROXY`` and the like, which ``httpx`` honours
by default), the client is used as before, so its choice of proxy per URL stays exactly
``httpx``'s; its cookie jar refuses every cookie there too.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Sequence
from functools import lru_cache
from http.cookiejar import CookieJar, DefaultCookiePolicy
from types import TracebackType

import httpx

__all__ = ["Upstream"]

#: Headers the client adds on its own; the upstream gets them only when the client sent them.
_CLIENT_DEFAULTS = ("accept", "accept-encoding", "user-agent")
#: What ``httpx.AsyncClient`` puts before the client's headers (the defaults above removed):
#: kept, so the upstream receives the very head it did when the client sent every request.
_KEEP_ALIVE = (b"Connection", b"keep-alive")

Headers = Sequence[tuple[bytes, bytes]]


@lru_cache(maxsize=512)
def _url(text: str) -> httpx.URL:
    """A URL parsed once: a proxy sends to a handful of paths (``httpx.URL`` is immutable)."""
    return httpx.URL(text)


class Upstream:
    """The upstream connection pool: open it with ``async with``, then :meth:`send`."""

    def __init__(self, *, read_timeout: float, connect_timeout: float) -> None:
        self.timeout = httpx.Timeout(read_timeout, connect=connect_timeout, pool=connect_timeout)
        self._extensions = {"timeout": self.timeout.as_dict()}
        self._transport: httpx.AsyncHTTPTransport | None = None
        self._client: httpx.AsyncClient | None = None

    async def __aenter__(self) -> Upstream:
        if urllib.request.getproxies():  # what httpx itself reads: its routing, as it does it
            refuse = CookieJar(DefaultCookiePolicy(allowed_domains=[]))
            self._client = httpx.AsyncClient(
                timeout=self.timeout, follow_redirects=False, cookies=refuse
            )
        else:
            self._transport = httpx.AsyncHTTPTransport(
                limits=httpx.Limits(
                    max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0
                )
            )  # httpx.AsyncClient's own limits
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._client is not None:
            await self._client.aclose()
        if self._transport is not None:
            await self._transport.aclose()

    async def send(self, method: str, url: str, headers: Headers, content: bytes) -> httpx.Response:
        """The upstream's response, its body not read yet (close it when done); raises
        ``httpx.HTTPError`` when the upstream cannot be reached or answers too late."""
        if self._client is not None:
            return await self._client_send(method, url, headers, content)
        assert self._transport is not None, "sent only between __aenter__ and __aexit__"
        request = httpx.Request(
            method,
            _url(url),
            headers=[_KEEP_ALIVE, *headers],
            content=content,
            extensions=self._extensions,
        )
        return await self._transport.handle_async_request(request)

    async def _client_send(
        self, method: str, url: str, headers: Headers, content: bytes
    ) -> httpx.Response:
        assert self._client is not None, "called when the client is open"
        request = self._client.build_request(method, url, headers=list(headers), content=content)
        names = {k.lower() for k, _ in headers}
        for name in _CLIENT_DEFAULTS:
            if name.encode() not in names and name in request.headers:
                del request.headers[name]
        return await self._client.send(request, stream=True)
