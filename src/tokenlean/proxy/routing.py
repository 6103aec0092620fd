"""Which API a request speaks, where it goes, and which headers travel with it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from tokenlean.proxy.settings import ProxySettings

Api = Literal["anthropic", "openai_chat", "openai_responses"]
Provider = Literal["anthropic", "openai"]

#: The request bodies the proxy rewrites; any other path is forwarded untouched.
REWRITTEN_PATHS: Mapping[str, Api] = {
    "/v1/messages": "anthropic",
    "/v1/chat/completions": "openai_chat",
    "/v1/responses": "openai_responses",
}

#: Hop-by-hop headers (RFC 9110 section 7.6.1) concern one connection, never the next one; host
#: and content-length are rebuilt for the upstream request.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
_REBUILT = frozenset({"host", "content-length"})


def api_for(method: str, path: str) -> Api | None:
    """The API whose body the proxy rewrites, or None to forward the request untouched."""
    if method != "POST":
        return None
    return REWRITTEN_PATHS.get(path.rstrip("/"))


def provider_for(path: str, headers: Mapping[str, str]) -> Provider:
    """Anthropic for its paths or when the client speaks its protocol; OpenAI otherwise.

    Paths such as ``/v1/models`` exist at both providers, so the ``anthropic-version`` header,
    which every Anthropic client sends, decides for them.
    """
    if path.startswith(("/v1/messages", "/v1/complete")) or "anthropic-version" in headers:
        return "anthropic"
    return "openai"


def upstream_url(settings: ProxySettings, provider: Provider, path: str, query: str) -> str:
    base = settings.upstream or (
        settings.anthropic_upstream if provider == "anthropic" else settings.openai_upstream
    )
    url = base.rstrip("/") + path
    return f"{url}?{query}" if query else url


def _connection_tokens(headers: Iterable[tuple[str, str]]) -> set[str]:
    """Headers named in ``Connection`` are hop-by-hop for this connection too."""
    named: set[str] = set()
    for key, value in headers:
        if key.lower() == "connection":
            named.update(t.strip().lower() for t in value.split(","))
    return named


def forward_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The client's headers minus hop-by-hop ones, host and content-length, order kept."""
    pairs = list(headers)
    dropped = _HOP_BY_HOP | _REBUILT | _connection_tokens(pairs)
    return [(k, v) for k, v in pairs if k.lower() not in dropped]


def response_headers(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The upstream's response headers minus hop-by-hop ones (content-length stays: the body
    is passed on byte for byte, still encoded as the upstream sent it)."""
    pairs = list(headers)
    named = _connection_tokens((k.decode("latin-1"), v.decode("latin-1")) for k, v in pairs)
    dropped = _HOP_BY_HOP | named
    return [(k, v) for k, v in pairs if k.decode("latin-1").lower() not in dropped]
