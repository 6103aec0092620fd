"""The one place where the proxy rewrites a request body.

A *rewriter* takes the API a body speaks and the parsed body, and returns the new body with its
token counts, or None when nothing changed. The default one is ``tokenlean.raw.rewrite_request``
(first-sight shortening of tool results and past tool inputs, memoised, stateless); tests and
embedders inject their own. Whatever the rewriter does, :func:`prepare` never makes a request
worse than the client's own: a body that is not a JSON object, or a rewriter that raises,
forwards the original bytes.
"""

from __future__ import annotations

import importlib
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tokenlean.proxy.routing import Api

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


def default_rewriter(originals_dir: Path | None) -> Rewriter | None:
    """``tokenlean.raw.rewrite_request`` bound to its settings, or None when it is not there.

    Imported by name so the proxy works (forwarding unchanged) on a tree without it.
    """
    try:
        raw: Any = importlib.import_module("tokenlean.raw")
    except ModuleNotFoundError as exc:
        if exc.name not in ("tokenlean.raw", "tokenlean"):
            raise
        return None
    settings = raw.RawSettings(originals_dir=originals_dir)

    def rewrite(api: Api, body: Mapping[str, Any]) -> RewriteOutcome | None:
        result: RewriteOutcome | None = raw.rewrite_request(api, body, settings=settings)
        return result

    return rewrite


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request body ready to forward, and what the rewrite did to it."""

    raw: bytes  # as the client sent it
    content: bytes  # as forwarded: ``raw`` itself unless the rewrite changed the body
    outcome: RewriteOutcome | None = None
    seconds: float = 0.0  # time spent parsing, rewriting and serialising
    failure: str | None = None  # why a rewrite was abandoned


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        body = json.loads(raw)
    except ValueError:  # not JSON, or not UTF-8: the provider will judge it, not us
        return None
    return body if isinstance(body, dict) else None


def _rewrite(rewriter: Rewriter, api: Api, body: dict[str, Any]) -> tuple[Any, bytes | None]:
    outcome = rewriter(api, body)
    if outcome is None:
        return None, None
    # ASCII-escaped so that any string the client sent (even a lone surrogate) serialises.
    return outcome, json.dumps(outcome.body, separators=(",", ":")).encode()


def prepare(
    rewriter: Rewriter | None, api: Api | None, raw: bytes, lock: threading.Lock
) -> Prepared:
    """Parse and rewrite one request body; any failure forwards ``raw`` unchanged."""
    if rewriter is None or api is None:
        return Prepared(raw, raw)
    start = time.perf_counter()
    body = _parse(raw)
    if body is None:
        return Prepared(raw, raw, seconds=time.perf_counter() - start)
    try:
        with lock:  # one rewrite at a time: the rewriter's memo need not be thread-safe
            outcome, content = _rewrite(rewriter, api, body)
    except Exception as exc:  # never break the agent: log it and send what the client sent
        log.warning("tokenlean proxy: rewrite failed, forwarding unchanged: %r", exc)
        return Prepared(raw, raw, None, time.perf_counter() - start, repr(exc))
    if outcome is None or content is None:
        return Prepared(raw, raw, seconds=time.perf_counter() - start)
    return Prepared(raw, content, outcome, time.perf_counter() - start)
