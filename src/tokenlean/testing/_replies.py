"""What the fake provider receives (:class:`Recorded`) and answers (:class:`Reply`), and the
replies every API's answers are made of: JSON, and server-sent events."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Recorded", "Reply", "Script", "json_reply", "sse_event", "sse_reply"]


@dataclass(frozen=True)
class Recorded:
    """One request as the fake provider received it."""

    method: str
    path: str
    query: str
    headers: Sequence[tuple[str, str]]  # names lower-cased, order and repeats kept
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k == name.lower()), None)

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    """An answer; ``delay`` seconds pass before it is sent (a slow model), and a client that
    closes its connection meanwhile gets none (the request is then ``abandoned``)."""

    status: int = 200
    body: bytes | Iterable[bytes] = b""
    headers: Sequence[tuple[str, str]] = (("content-type", "application/json"),)
    delay: float = 0.0


Script = Callable[[Recorded], Reply]


def json_reply(value: Any, status: int = 200) -> Reply:
    return Reply(status, json.dumps(value).encode())


def sse_reply(events: Iterable[bytes]) -> Reply:
    return Reply(
        200, events, (("content-type", "text/event-stream"), ("cache-control", "no-cache"))
    )


def sse_event(data: Mapping[str, Any] | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()
