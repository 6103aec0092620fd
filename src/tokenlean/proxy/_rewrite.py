"""The one place where the proxy rewrites a request body.

A *rewriter* takes the API a body speaks and the parsed body, and returns the new body with its
token counts, or None when nothing changed. The default one is ``tokenlean.raw.rewrite_request``
(first-sight shortening of tool results and past tool inputs, memoised, stateless); tests and
embedders inject their own. Rewrites run concurrently, one per request, so a rewriter must be
thread-safe and must not mutate the body it is given (the statistics read it afterwards).
Whatever the rewriter does, :func:`prepare` never makes a request worse than the client's own: a
body it cannot read (not a JSON object, nested too deeply, compressed in a way it cannot decode),
a rewriter that raises, or a rewritten body larger than the proxy accepts forwards the original
bytes, with a log line. A compressed body is decoded, rewritten and encoded the same way again;
a rewritten body keeps the client's bytes wherever the rewrite changed nothing
(:mod:`tokenlean.proxy._splice`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from tokenlean._cancel import Cancelled, cancellable
from tokenlean.proxy._encoding import Encoder, Undecodable, decode
from tokenlean.proxy._scan import ScannedBody, read_body
from tokenlean.proxy._settings import MAX_BODY_BYTES
from tokenlean.proxy._splice import serialise
from tokenlean.raw import Api, RawSettings, Retrieval, frozen_bodies, list_key, rewrite_request
from tokenlean.store import ORIGINALS_MAX_AGE, ORIGINALS_MAX_BYTES

__all__ = [
    "INLINE_BODY_BYTES",
    "INLINE_NEW_CHARS",
    "OwnRewriter",
    "Prepared",
    "Read",
    "RewriteOutcome",
    "Rewriter",
    "begin",
    "default_rewriter",
    "prepare",
    "prepare_later",
    "read_request",
    "rewrite_read",
]

log = logging.getLogger("tokenlean.proxy")


class RewriteOutcome(Protocol):
    """What a rewriter returns (``tokenlean.raw.RewriteResult`` has this shape)."""

    @property
    def body(self) -> Mapping[str, Any]: ...
    @property
    def tokens_before(self) -> int: ...
    @property
    def tokens_after(self) -> int: ...
    @property
    def results_shortened(self) -> int: ...
    @property
    def inputs_shortened(self) -> int: ...


Rewriter = Callable[[Api, Mapping[str, Any]], "RewriteOutcome | None"]


def default_rewriter(
    originals_dir: Path | None,
    *,
    originals_url: str | None = None,
    retrieval: Retrieval | None = None,
    max_bytes: int = ORIGINALS_MAX_BYTES,
    max_age: float = ORIGINALS_MAX_AGE,
) -> Rewriter:
    """``tokenlean.raw.rewrite_request`` bound to its settings (and so to one planner, whose
    memo every request of the proxy shares, and one originals store, which counts the bytes
    written between sweeps); ``originals_url``, ``retrieval``, ``max_bytes`` and ``max_age`` as
    ``RawSettings`` takes them (``originals_max_bytes``, ``originals_max_age``), ``retrieval``
    ``"mcp"`` unless given with a Redis ``originals_url`` (the only way back it has). Raises
    ``ValueError`` for an originals folder another user owns."""
    if originals_url is not None and retrieval is None:
        retrieval = "mcp"
    given: dict[str, Any] = {} if retrieval is None else {"retrieval": retrieval}
    settings = RawSettings(
        originals_dir=originals_dir,
        originals_url=originals_url,
        originals_max_bytes=max_bytes,
        originals_max_age=max_age,
        **given,
    )
    return OwnRewriter(settings)


@dataclass(frozen=True, slots=True)
class OwnRewriter:
    """``tokenlean.raw.rewrite_request`` bound to its settings (what :func:`default_rewriter`
    makes): a rewriter the proxy knows, which may run on the event loop when it waits on
    nothing (``local``: its originals go to a folder, not over the network)."""

    settings: RawSettings

    def __call__(self, api: Api, body: Mapping[str, Any]) -> RewriteOutcome | None:
        return rewrite_request(api, body, settings=self.settings)

    @property
    def local(self) -> bool:
        return self.settings.originals_url is None


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request body ready to forward, what the rewrite did to it, and the body as parsed.

    ``parsed`` says whether :func:`prepare` parsed ``raw`` (it does when a rewriter runs); then
    ``body`` is that one parse (None: not a JSON object), which the statistics read instead of
    parsing again. Otherwise nothing has parsed it yet.
    """

    raw: bytes  # as the client sent it
    content: bytes  # as forwarded: ``raw`` itself unless the rewrite changed the body
    outcome: RewriteOutcome | None = None  # ``outcome.body`` is what ``content`` serialises
    seconds: float = 0.0  # time spent parsing, rewriting and serialising
    failure: str | None = None  # why a rewrite was abandoned
    body: ScannedBody | None = None
    parsed: bool = False
    unread: str | None = None  # why the body could not be read (parsed, and ``body`` None)
    cancelled: bool = False  # the rewrite stopped: no one waits for its body (``content`` is raw)


def _read(api: Api, raw: bytes, encoding: str | None, limit: int) -> tuple[ScannedBody, Encoder]:
    """The body parsed, and the encoder of a rewritten one; raises Undecodable when unread."""
    data, encoder = decode(encoding, raw, limit)
    body = read_body(data, list_key(api))
    if isinstance(body, str):
        raise Undecodable(body)
    return body, encoder


@dataclass(frozen=True, slots=True)
class Read:
    """A request body read, not yet rewritten."""

    raw: bytes
    body: ScannedBody
    encoder: Encoder
    seconds: float  # time spent reading it


def read_request(
    api: Api, raw: bytes, *, encoding: str | None = None, limit: int = MAX_BODY_BYTES
) -> Read | Prepared:
    """``raw`` read (a :class:`Read`), or forwarded as sent when it cannot be (a Prepared)."""
    start = time.perf_counter()
    try:
        body, encoder = _read(api, raw, encoding, limit)
    except Undecodable as exc:
        log.warning("tokenlean proxy: %s body not read (%s); forwarded as sent", api, exc)
        return Prepared(raw, raw, seconds=time.perf_counter() - start, parsed=True, unread=str(exc))
    return Read(raw, body, encoder, time.perf_counter() - start)


def rewrite_read(
    rewriter: Rewriter,
    api: Api,
    read: Read,
    *,
    limit: int = MAX_BODY_BYTES,
    cancelled: Callable[[], bool] | None = None,
) -> Prepared:
    """The rest of :func:`prepare`: ``read`` rewritten and serialised."""
    start = time.perf_counter() - read.seconds  # the seconds count the reading too
    raw, body = read.raw, read.body
    try:
        # The parse is never mutated and shares its messages with earlier requests that sent
        # them: each is read once (frozen_bodies).
        with cancellable(cancelled) if cancelled is not None else nullcontext(), frozen_bodies():
            outcome = rewriter(api, body.values)
        content = (
            None if outcome is None else read.encoder(serialise(body, outcome.body, list_key(api)))
        )
        if content is not None and len(content) > limit:
            raise ValueError(f"rewritten body of {len(content):,} bytes, over {limit:,}")
    except Cancelled:  # no one to send it to: neither a failure nor a body to forward
        seconds = time.perf_counter() - start
        return Prepared(raw, raw, None, seconds, body=body, parsed=True, cancelled=True)
    except Exception as exc:  # never break the agent: log it and send what the client sent
        log.warning("tokenlean proxy: rewrite failed, forwarding unchanged: %r", exc)
        seconds = time.perf_counter() - start
        return Prepared(raw, raw, None, seconds, repr(exc), body, parsed=True)
    seconds = time.perf_counter() - start
    if outcome is None or content is None:  # nothing changed
        return Prepared(raw, raw, seconds=seconds, body=body, parsed=True)
    return Prepared(raw, content, outcome, seconds, body=body, parsed=True)


def prepare(
    rewriter: Rewriter | None,
    api: Api | None,
    raw: bytes,
    *,
    encoding: str | None = None,
    limit: int = MAX_BODY_BYTES,
    cancelled: Callable[[], bool] | None = None,
) -> Prepared:
    """Parse and rewrite one request body (sent with ``content-encoding: encoding``, within the
    ``limit`` the proxy accepts); any failure forwards ``raw`` unchanged. The rewrite stops
    between turns once ``cancelled()`` is true (its client left): then ``Prepared.cancelled``.

    Safe to call from several threads at once (each call has its own body; the default
    rewriter's memo is thread-safe).
    """
    if rewriter is None or api is None:
        return Prepared(raw, raw)
    read = read_request(api, raw, encoding=encoding, limit=limit)
    if isinstance(read, Prepared):
        return read
    return rewrite_read(rewriter, api, read, limit=limit, cancelled=cancelled)


#: A body up to this size is read on the event loop: a comparison with the history it re-sends
#: (:mod:`tokenlean.proxy._recent`), or at worst the parse of this much, about a millisecond.
INLINE_BODY_BYTES = 256 * 2**10
#: Read so, a body with at most this many characters of new messages is rewritten there too:
#: the rest of its history is a memo hit, well under a millisecond, which is less than handing
#: it to a thread and back costs (0.3-0.4 ms of CPU per request, measured).
INLINE_NEW_CHARS = 8 * 2**10

Later = Callable[[Callable[[], bool]], Prepared]  # the rest of a rewrite, given ``cancelled``


def begin(
    rewriter: Rewriter, api: Api, raw: bytes, *, encoding: str | None, limit: int
) -> Prepared | Later:
    """The rewrite of a small body that brings little new, done now; otherwise what is left to
    do off the event loop (the whole of it for a larger body: its parse is no longer short)."""
    if len(raw) > INLINE_BODY_BYTES or encoding is not None:  # a compressed body may grow
        return partial(prepare_later, rewriter, api, raw, encoding, limit)
    read = read_request(api, raw, encoding=encoding, limit=limit)
    if isinstance(read, Prepared) or read.body.fresh <= INLINE_NEW_CHARS:
        return (
            read if isinstance(read, Prepared) else rewrite_read(rewriter, api, read, limit=limit)
        )
    return partial(_rewrite_later, rewriter, api, read, limit)


def prepare_later(
    rewriter: Rewriter,
    api: Api,
    raw: bytes,
    encoding: str | None,
    limit: int,
    cancelled: Callable[[], bool],
) -> Prepared:
    return prepare(rewriter, api, raw, encoding=encoding, limit=limit, cancelled=cancelled)


def _rewrite_later(
    rewriter: Rewriter, api: Api, read: Read, limit: int, cancelled: Callable[[], bool]
) -> Prepared:
    return rewrite_read(rewriter, api, read, limit=limit, cancelled=cancelled)
