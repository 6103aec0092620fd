"""Helpers for the proxy tests: a trivial rewriter with the real one's result shape, polling."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenlean.proxy import BackgroundProxy, Rewriter, default_rewriter

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


#: A passing test log long enough for the default rewrite to shorten (its original kept on disk).
PASSING_LOG = "".join(f"test_{i} PASSED in 0.0{i % 10}s\n" for i in range(300))


def log_turn(model: str = "claude-test", call_id: str = "t1") -> dict[str, Any]:
    """An Anthropic body whose last turn is a bash call's long result (:data:`PASSING_LOG`)."""
    result = {"type": "tool_result", "tool_use_id": call_id, "content": PASSING_LOG}
    call = {"type": "tool_use", "id": call_id, "name": "bash", "input": {"cmd": "x"}}
    return {
        "model": model,
        "max_tokens": 8,
        "messages": [
            {"role": "user", "content": "run the tests"},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ],
    }


def recording_rewriter(originals: Path) -> tuple[Rewriter, list[dict[str, Any]]]:
    """The default rewrite (originals kept in ``originals``), and the list it records each body
    the client sent into, as the client sent it."""
    inner = default_rewriter(originals)
    client_bodies: list[dict[str, Any]] = []

    def recording(api: Any, body: Mapping[str, Any]) -> Any:
        client_bodies.append(json.loads(json.dumps(body)))
        return inner(api, body) if inner is not None else None

    return recording, client_bodies
