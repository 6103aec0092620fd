"""Who may use the proxy, checked in front of every route and before any body is read.

A pure ASGI middleware, so a route added later is covered too. In order:

1. ``Host`` must be a loopback name or address, or one of ``allowed_hosts``: a DNS-rebinding
   page reaches the proxy under its own name (``Host: evil.example``) and is refused (403).
2. Browsers are refused (403): a request with ``Origin``, or with the ``Sec-Fetch-*`` headers
   only browsers send. Node's ``fetch`` (Claude Code, gemini-cli) sends ``Sec-Fetch-Mode: cors``
   on every request by itself, so that header alone, with that value, is not a browser.
3. With a ``token`` set, the request must carry it, as the header ``x-tokenlean-token`` or as a
   base URL prefix ``/t/TOKEN`` (for clients that cannot add a header), else 401. Both are
   compared in constant time, and taken off before routing: the upstream never sees them, and
   no log line or answer repeats them.

A request that passed with the token is marked (:func:`authorized`): the statistics of every
session are shown only to it.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Mapping
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from tokenlean.proxy._errors import error_response
from tokenlean.proxy._settings import ProxySettings

__all__ = ["TOKEN_HEADER", "Guard", "authorized", "check_listen", "is_loopback"]

TOKEN_HEADER = "x-tokenlean-token"
_PREFIX = "/t/"
_TOKEN_NAME = TOKEN_HEADER.encode()
_AUTHORIZED = "tokenlean.authorized"
_BROWSER_ONLY = (b"origin", b"sec-fetch-site", b"sec-fetch-dest", b"sec-fetch-user")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is this machine
    only: ``localhost``, a ``.localhost`` name, 127.0.0.0/8 or ::1."""
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_listen(host: str, settings: ProxySettings) -> None:
    """Refuse (ValueError) to listen beyond loopback without a token: anyone who can reach the
    port could spend the keys of the clients and read their conversations' statistics."""
    if settings.token is None and not is_loopback(host):
        raise ValueError(
            f"listening on {host} makes the proxy reachable from other machines: set a shared "
            "secret with --token or TOKENLEAN_PROXY_TOKEN (clients then send it as the header "
            f"{TOKEN_HEADER}, or use the base URL http://HOST:PORT{_PREFIX}TOKEN)"
        )


def authorized(scope: Mapping[str, Any]) -> bool:
    """Whether this request carried the proxy's token (False when none is set)."""
    return bool(scope.get(_AUTHORIZED))


def _host_name(value: bytes) -> str:
    host = value.decode("latin-1").strip().lower()
    if host.startswith("["):  # [::1]:8787
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _same(given: str | bytes, token: bytes) -> bool:
    data = given.encode("latin-1") if isinstance(given, str) else given
    return hmac.compare_digest(data, token)


class Guard:
    """Wraps the proxy app; see the module's docstring for what it checks."""

    def __init__(self, app: ASGIApp, settings: ProxySettings) -> None:
        self.app = app
        self._token = None if settings.token is None else settings.token.encode()
        self._hosts = frozenset(h.lower().strip("[]") for h in settings.allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = list(scope["headers"])
        scope, header, prefix = _take_token(scope, headers)
        refusal = self._browser_or_host(headers) or self._check_token(header, prefix)
        if refusal is not None:
            await error_response(*refusal)(scope, receive, send)
            return
        if self._token is not None:
            scope[_AUTHORIZED] = True
        await self.app(scope, receive, send)

    def _browser_or_host(self, headers: list[tuple[bytes, bytes]]) -> tuple[int, str, str] | None:
        for name, value in headers:
            name = name.lower()
            if name == b"host" and not self._host_allowed(_host_name(value)):
                message = "the proxy answers only to loopback names and the hosts it is given"
                return 403, "forbidden_host", message
            mode = name == b"sec-fetch-mode" and value.strip().lower() != b"cors"
            if name in _BROWSER_ONLY or mode:
                return 403, "forbidden_origin", "the tokenlean proxy does not serve browsers"
        return None

    def _host_allowed(self, host: str) -> bool:
        return is_loopback(host) or host in self._hosts or "*" in self._hosts

    def _check_token(self, header: bytes | None, prefix: str | None) -> tuple[int, str, str] | None:
        if self._token is None:  # a header is dropped unread; a prefix would be routed on
            if prefix is None:
                return None
            message = f"this proxy has no token: start it with --token, or drop {_PREFIX}..."
            return 401, "authentication_error", message + " from the base URL"
        if not any(g is not None and _same(g, self._token) for g in (header, prefix)):
            message = (
                f"this proxy needs its token: the header {TOKEN_HEADER}, or the base URL "
                f"http://HOST:PORT{_PREFIX}TOKEN"
            )
            return 401, "authentication_error", message
        return None


def _take_token(
    scope: Scope, headers: list[tuple[bytes, bytes]]
) -> tuple[Scope, bytes | None, str | None]:
    """The scope without the token (header and path prefix), and the token of each."""
    header = next((v.strip() for k, v in headers if k.lower() == _TOKEN_NAME), None)
    kept = [(k, v) for k, v in headers if k.lower() != _TOKEN_NAME]
    path: str = scope["path"]
    raw: bytes = scope.get("raw_path") or path.encode()
    prefix = None
    if path.startswith(_PREFIX):
        prefix, _, rest = path[len(_PREFIX) :].partition("/")
        path = "/" + rest
        raw = b"/" + raw[len(_PREFIX) :].partition(b"/")[2]
    return {**scope, "headers": kept, "path": path, "raw_path": raw}, header, prefix
