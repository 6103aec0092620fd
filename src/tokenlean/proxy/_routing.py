"""Which API a request speaks, where it goes, and which headers travel with it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Literal
from urllib.parse import parse_qsl, unquote

from tokenlean.proxy._settings import ProxySettings
from tokenlean.raw import Api

__all__ = [
    "REWRITTEN_PATHS",
    "api_for",
    "forward_headers",
    "has_dot_segment",
    "mask_key",
    "response_headers",
    "upstream_base",
    "upstream_url",
    "vendor_for",
]

#: Whose API a request goes to: it picks the upstream when no single ``upstream`` is set.
Vendor = Literal["anthropic", "openai", "google"]

#: The request bodies the proxy rewrites; any other path is forwarded untouched.
REWRITTEN_PATHS: Mapping[str, Api] = {
    "/v1/messages": "anthropic",
    "/v1/chat/completions": "openai_chat",
    "/v1/responses": "openai_responses",
}
#: Gemini names the model in the path: ``/v1beta/models/{model}:generateContent`` (or
#: ``:streamGenerateContent``, or under ``/v1``).
_GEMINI_PATH = re.compile(r"/v1(?:beta)?/models/[^/:]+:(?:generateContent|streamGenerateContent)")
#: Any Gemini API path (``/v1beta/...``, uploads under ``/upload/v1beta/...``; under ``/v1``, a
#: model method such as ``:countTokens``).
_GOOGLE_PATH = re.compile(r"(?:/upload)?/v1beta/|/v1/models/[^/]+:")
#: What separates path segments, for any server behind a gateway (some take ``\`` too).
_SEGMENTS = re.compile(r"[/\\]")
#: Percent-decodings tried on a path: a server may decode once more than the one before it.
_DECODINGS = 3
#: A Google API key in a query string (``?key=...``), masked wherever the proxy shows a URL.
_KEY_QUERY = re.compile(r"((?:^|[?&\s])key=)[^&\s'\"]+")
#: Credentials in a URL (``http://user:secret@gateway``), masked the same way.
_USERINFO = re.compile(r"(://)[^/?#@\s'\"]+@")

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
    path = path.rstrip("/")
    if _GEMINI_PATH.fullmatch(path):
        return "gemini"
    return REWRITTEN_PATHS.get(path)


def vendor_for(path: str, headers: Mapping[str, str], query: str = "") -> Vendor:
    """Google for a request carrying a Google API key (``x-goog-api-key``, or ``key=`` in the
    ``query``) or on a Gemini path; Anthropic for its paths or when the client speaks its
    protocol; OpenAI otherwise.

    A Google key goes to Google whatever the path: ``/v1/models`` or ``/v1/files`` exist at
    every provider, and a key must never reach another's. For the other paths both have, the
    ``anthropic-version`` header, which every Anthropic client sends, decides.
    """
    if "x-goog-api-key" in headers or _google_key(query):
        return "google"
    if path.startswith(("/v1/messages", "/v1/complete")) or "anthropic-version" in headers:
        return "anthropic"
    return "google" if _GOOGLE_PATH.match(path) else "openai"


def _google_key(query: str) -> bool:
    return any(name == "key" for name, _ in parse_qsl(query, keep_blank_values=True))


def has_dot_segment(raw_path: str) -> bool:
    """Whether ``raw_path`` has a ``.`` or ``..`` segment, as written or once percent-decoded
    (up to :data:`_DECODINGS` times): appended to a base with a path prefix (a gateway), it
    would climb out of the prefix on a server that resolves it. No API path has one."""
    text = raw_path
    for _ in range(_DECODINGS + 1):
        if any(segment in (".", "..") for segment in _SEGMENTS.split(text)):
            return True
        text, before = unquote(text), text
        if text == before:
            return False
    return True  # still decoding to something new after that many: refused too


def upstream_base(settings: ProxySettings, vendor: Vendor) -> str:
    bases = {
        "anthropic": settings.anthropic_upstream,
        "openai": settings.openai_upstream,
        "google": settings.gemini_upstream,
    }
    return (settings.upstream or bases[vendor]).rstrip("/")


def mask_key(text: str) -> str:
    """``text`` with the value of any ``key=`` query parameter hidden (Google API keys travel
    in the query) and any credentials of a URL (``user:secret@``), for anything the proxy logs
    or answers itself."""
    return _USERINFO.sub(r"\1***@", _KEY_QUERY.sub(r"\1***", text))


def upstream_url(base: str, raw_path: str, query: str) -> str:
    """``base`` + the path as the client wrote it (percent-escapes kept) + its query."""
    url = base + raw_path
    return f"{url}?{query}" if query else url


def _connection_tokens(headers: Iterable[tuple[bytes, bytes]]) -> set[bytes]:
    """Headers named in ``Connection`` are hop-by-hop for this connection too."""
    named: set[bytes] = set()
    for key, value in headers:
        if key.lower() == b"connection":
            named.update(t.strip().lower() for t in value.split(b","))
    return named


def _without(
    headers: Iterable[tuple[bytes, bytes]], names: frozenset[str]
) -> list[tuple[bytes, bytes]]:
    pairs = list(headers)
    dropped = {n.encode() for n in names} | _connection_tokens(pairs)
    return [(k, v) for k, v in pairs if k.lower() not in dropped]


def forward_headers(
    headers: Iterable[tuple[bytes, bytes]], own: frozenset[str] = frozenset()
) -> list[tuple[bytes, bytes]]:
    """The client's headers, as bytes and in order, minus hop-by-hop ones, host,
    content-length and the proxy's ``own``."""
    return _without(headers, _HOP_BY_HOP | _REBUILT | own)


def response_headers(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """The upstream's response headers minus hop-by-hop ones (content-length stays: the body
    is passed on byte for byte, still encoded as the upstream sent it)."""
    return _without(headers, _HOP_BY_HOP)
