"""The proxy's configuration: one frozen dataclass, every default in one place."""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from tokenlean import checks
from tokenlean._retention import ORIGINALS_MAX_AGE, ORIGINALS_MAX_BYTES, check_limits
from tokenlean.cost import ANTHROPIC, NO_CACHE, OPENAI, CachePricing
from tokenlean.raw import Api
from tokenlean.redis_store import check_url

__all__ = [
    "AB_IDLE",
    "ANTHROPIC_API",
    "GEMINI_API",
    "MAX_BODY_BYTES",
    "MAX_SESSIONS",
    "MAX_STATS_BYTES",
    "OPENAI_API",
    "ProxySettings",
    "default_max_connections",
    "default_rewrite_threads",
]

ANTHROPIC_API = "https://api.anthropic.com"
OPENAI_API = "https://api.openai.com"
GEMINI_API = "https://generativelanguage.googleapis.com"

#: Request bodies up to this size are accepted (a long coding session with images stays under it).
MAX_BODY_BYTES = 32 * 1024 * 1024
#: Sessions whose statistics are kept; the least recently seen goes first (its counts stay in
#: the total). Each keeps the block fingerprints of its last few prompts.
MAX_SESSIONS = 1_000
#: A/B arms: a session idle this many seconds is finished (its line written to the A/B log).
AB_IDLE = 1800.0
#: ... and within this many bytes of those fingerprints, however long their histories (a
#: 2,000-message history keeps about 256 KB; 1,000 of them would keep 256 MB).
MAX_STATS_BYTES = 64 * 2**20
#: The open-file limit assumed where the system does not say (or says "unlimited").
_UNKNOWN_FILE_LIMIT = 4096
#: A token must be long enough not to be guessed, and fit in a URL path as it is.
_TOKEN = re.compile(r"[A-Za-z0-9._~-]{16,}")


def default_rewrite_threads() -> int:
    """How many bodies are rewritten at once by default: one per CPU this process may use, and
    at least two, so that one long rewrite never holds up every other request."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        cpus = os.cpu_count() or 1
    return max(2, cpus)


def default_max_connections() -> int:
    """How many client connections one process holds at once by default: a quarter of its
    open-file limit (often 1,024), since a forwarded request holds two files (the client's
    socket and the upstream's) and the rest leave room for originals, logs and upstream pools."""
    try:
        import resource  # Unix only

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError):
        soft = -1
    return max(8, (soft if soft > 0 else _UNKNOWN_FILE_LIMIT) // 4)


def _check_url(name: str, url: str | None) -> None:
    if url is None:
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{name} must be an http(s) URL such as https://api.anthropic.com")
    if parts.query or parts.fragment:
        raise ValueError(f"{name} must not carry a query or fragment")


def _check_token(token: str | None) -> None:
    # The message never repeats the token: it may be a real secret with a typo in it.
    if token is not None and not _TOKEN.fullmatch(token):
        raise ValueError(
            "the proxy token must be at least 16 characters among A-Z a-z 0-9 . _ ~ - "
            "(make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )


@dataclass(frozen=True, kw_only=True)
class ProxySettings:
    """How the proxy forwards.

    ``upstream`` replaces the base URL for every path; without it, Anthropic paths go to
    ``anthropic_upstream``, Gemini paths (``/v1beta/...``, ``/v1/models/{model}:method``, or any
    request with a Google key: ``x-goog-api-key`` or ``?key=``) to ``gemini_upstream`` and
    everything else to ``openai_upstream``. The request path and query are appended to the base,
    so a base with a path prefix (a gateway) works too; a path with a ``.`` or ``..`` segment is
    refused (400).

    ``gemini_pricing`` prices the statistics of Gemini requests: no cache discount by default,
    since Gemini's implicit-cache discount and minimum differ by model (give your own).
    ``output_price``, when given, replaces the output price of all three (in uncached input
    tokens, as :attr:`~tokenlean.cost.CachePricing.output`) in the whole bill. With
    ``price_by_model`` (the default), a request naming a model that the genai-prices catalogue
    prices (the ``prices`` extra) is priced as that model instead, and one naming another model
    at its API's pricing above, said once per model in the log (:mod:`tokenlean.prices`).

    ``originals_max_bytes`` and ``originals_max_age`` bound the originals folder (least
    recently used first past the size cap; unused for that many seconds: deleted), as
    :class:`~tokenlean.store.FolderOriginalStore` takes them. ``originals_url``
    (``redis://HOST:PORT/DB``) keeps them on a Redis server instead
    (:class:`~tokenlean.redis_store.RedisOriginalStore`, bounded the same way).

    ``connect_timeout`` bounds how long an unreachable upstream can hold a request before the
    client gets a 502; ``read_timeout`` is the longest silence allowed while waiting for upstream
    bytes (a long non-streamed answer can take minutes, so it matches the SDKs' 10 minutes).
    ``head_timeout`` is how long a client may take to send a request's whole head (request line
    and headers) from when its connection opens or its previous answer ends: past it, the
    connection is closed. ``body_timeout`` is how long it may take to send the whole body
    after its head: past it, a 408. Both are deadlines for the whole, not for each byte, so a
    client dripping a byte at a time cannot hold a connection. ``max_connections`` bounds the
    client connections one process holds (see :mod:`tokenlean.proxy._connections`): at the
    bound, a new one sheds the oldest connection that has not yet sent a whole head (its token
    is unread), so a flood of half-open connections never locks out a client with the token.

    ``rewrite_threads`` bounds how many request bodies are parsed and rewritten at once (each on
    a worker thread, off the event loop); it bounds the memory and CPU that rewrites take, and
    a small request waits for a large one only when that many are under way.

    ``token`` is the shared secret every request must carry (header ``x-tokenlean-token``, or
    the base URL prefix ``/t/TOKEN``); without it, only loopback clients should reach the proxy
    and none sees every session's statistics. ``allowed_hosts`` are the ``Host`` names answered
    besides loopback ones (``"*"``: any), which is what stops DNS rebinding. ``session_salt``
    keys the session labels (random per process unless given, so several workers agree when
    they share it); ``max_sessions`` bounds the statistics' session table.

    ``ab_share``, when given, runs an A/B test on live traffic (:mod:`tokenlean.proxy._ab`):
    that share of sessions, chosen by a hash of their salted label, are forwarded as sent
    (*control*), the others rewritten (*tokenlean*); each arm's usage is in ``/metrics`` with an
    ``arm`` label, and each finished session (idle ``ab_idle`` seconds, dropped from a table of
    ``max_sessions``, or open when the proxy stops) is one JSON line appended to ``ab_log``.

    ``workers_dir`` is a folder the processes of one ``--workers`` proxy share: each writes its
    figures there, and ``/metrics`` and ``/tokenlean/stats`` sum them all
    (:mod:`tokenlean.proxy._workers`); None in one process.
    """

    upstream: str | None = None
    anthropic_upstream: str = ANTHROPIC_API
    openai_upstream: str = OPENAI_API
    gemini_upstream: str = GEMINI_API
    originals_dir: Path | None = None
    originals_url: str | None = field(default=None, repr=False)  # it may hold a password
    originals_max_bytes: int = ORIGINALS_MAX_BYTES
    originals_max_age: float = ORIGINALS_MAX_AGE
    max_body_bytes: int = MAX_BODY_BYTES
    connect_timeout: float = 5.0
    read_timeout: float = 600.0
    head_timeout: float = 10.0
    body_timeout: float = 60.0
    max_connections: int = field(default_factory=default_max_connections)
    rewrite_threads: int = field(default_factory=default_rewrite_threads)
    anthropic_pricing: CachePricing = ANTHROPIC
    openai_pricing: CachePricing = OPENAI
    gemini_pricing: CachePricing = NO_CACHE
    output_price: float | None = None
    price_by_model: bool = True
    token: str | None = field(default=None, repr=False)
    allowed_hosts: tuple[str, ...] = ()
    session_salt: str = field(default_factory=lambda: secrets.token_hex(16), repr=False)
    max_sessions: int = MAX_SESSIONS
    ab_share: float | None = None
    ab_log: Path | None = None
    ab_idle: float = AB_IDLE
    workers_dir: Path | None = None

    def __post_init__(self) -> None:
        _check_url("upstream", self.upstream)
        _check_url("anthropic_upstream", self.anthropic_upstream)
        _check_url("openai_upstream", self.openai_upstream)
        _check_url("gemini_upstream", self.gemini_upstream)
        check_limits(self.originals_max_bytes, self.originals_max_age, prefix="originals_")
        if self.originals_url is not None:
            check_url(self.originals_url)
        checks.integer(self.max_body_bytes, "max_body_bytes", at_least=1)
        for name in ("connect_timeout", "read_timeout", "head_timeout", "body_timeout"):
            seconds = "a positive number of seconds"
            checks.number(getattr(self, name), name, above=0, wanted=seconds)
        checks.integer(self.max_connections, "max_connections", at_least=1)
        checks.integer(self.rewrite_threads, "rewrite_threads", at_least=1, wanted="a positive int")
        _check_token(self.token)
        if isinstance(self.allowed_hosts, str):
            raise ValueError("allowed_hosts must be a tuple of host names, not one string")
        if not self.session_salt:
            raise ValueError("session_salt must not be empty")
        checks.integer(self.max_sessions, "max_sessions", at_least=1)
        if self.output_price is not None:
            checks.number(self.output_price, "output_price", at_least=0)
        checks.flag(self.price_by_model, "price_by_model")
        if self.ab_share is not None:
            checks.number(self.ab_share, "ab_share", at_least=0, at_most=1)
        checks.number(self.ab_idle, "ab_idle", above=0, wanted="a positive number of seconds")

    def pricing(self) -> Mapping[Api, CachePricing]:
        """The pricing of each API's statistics, with ``output_price`` applied."""
        by_api: dict[Api, CachePricing] = {
            "anthropic": self.anthropic_pricing,
            "openai_chat": self.openai_pricing,
            "openai_responses": self.openai_pricing,
            "gemini": self.gemini_pricing,
        }
        if self.output_price is None:
            return by_api
        return {api: replace(p, output=self.output_price) for api, p in by_api.items()}
