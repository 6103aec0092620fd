"""Helpers for the proxy tests: a trivial rewriter with the real one's result shape, polling."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tokenlean.proxy import BackgroundProxy, Rewriter

MARKER = "tl-marker"
#: A proxy token for tests: with one, ``GET /tokenlean/stats`` shows every session.
TOKEN = "test-token-0123456789abcdef"


@dataclass(frozen=True)
class Outcome:
    """The shape of ``tokenlean.raw.RewriteResult``."""

    body: dict[str, Any]
    tokens_before: int
    tokens_after: int
    results_shortened: int = 0
    inputs_shortened: int = 0


def _replace_strings(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, Mapping):
        return {k: _replace_strings(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_strings(v, old, new) for v in value]
    return value


def marker_rewriter(calls: list[str] | None = None) -> Rewriter:
    """Upper-cases ``tl-marker`` wherever it appears; None when it appears nowhere."""

    def rewrite(api: Any, body: Mapping[str, Any]) -> Outcome | None:
        if calls is not None:
            calls.append(api)
        new = _replace_strings(body, MARKER, MARKER.upper())
        if new == body:
            return None
        return Outcome(new, 10, 10, results_shortened=1)

    return rewrite


ProxyFactory = Callable[..., BackgroundProxy]


def with_token(proxy: BackgroundProxy) -> str:
    """The base URL of a proxy started with ``token=TOKEN``: the token as its path prefix."""
    return f"{proxy.url}/t/{TOKEN}"


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll until ``predicate`` holds (the proxy counts a request after answering it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on now (for a server started as a subprocess)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
