"""Fixtures for the raw-body tests: a fake provider on 127.0.0.1 and real conversations.

The fake upstream answers the Anthropic Messages, Chat Completions and Responses paths (as JSON,
or as server-sent events when the body asks to stream) and records every request body it gets,
so tests assert on exactly what the SDKs sent over a real socket.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.data import trajectory_paths
from tokenlean.raw import RawSettings
from tokenlean.replay._formats import Trajectory, load_trajectory

TEXT = "done"


@dataclass
class Upstream:
    """The running fake provider: its base URL and the requests it received."""

    url: str
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [body for _, body in self.requests]


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    lines = []
    for name, data in events:
        if name:
            lines.append(f"event: {name}")
        lines.append(f"data: {data if isinstance(data, str) else json.dumps(data)}")
        lines.append("")
    return ("\n".join(lines) + "\n").encode()


def _anthropic(stream: bool) -> tuple[str, bytes]:
    usage = {"input_tokens": 10, "output_tokens": 1}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m"}
    if not stream:
        body = {**message, "content": [{"type": "text", "text": TEXT}], "usage": usage}
        body |= {"stop_reason": "end_turn", "stop_sequence": None}
        return "application/json", json.dumps(body).encode()
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
    delta = {"type": "text_delta", "text": TEXT}
    return "text/event-stream", _sse(
        [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "usage": {"output_tokens": 2},
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def _chat(stream: bool) -> tuple[str, bytes]:
    head = {"id": "chatcmpl-1", "created": 1, "model": "m"}
    if not stream:
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": TEXT},
            "finish_reason": "stop",
            "logprobs": None,
        }
        usage = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
        body = {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
        return "application/json", json.dumps(body).encode()
    chunk = {**head, "object": "chat.completion.chunk"}
    first = {"index": 0, "delta": {"role": "assistant", "content": TEXT}, "finish_reason": None}
    last = {"index": 0, "delta": {}, "finish_reason": "stop"}
    return "text/event-stream", _sse(
        [
            (None, {**chunk, "choices": [first]}),
            (None, {**chunk, "choices": [last]}),
            (None, "[DONE]"),
        ]
    )


def _response(status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": "m",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 1,
            "total_tokens": 11,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _responses(stream: bool) -> tuple[str, bytes]:
    part = {"type": "output_text", "text": TEXT, "annotations": []}
    item = {
        "type": "message",
        "id": "msg_1",
        "status": "completed",
        "role": "assistant",
        "content": [part],
    }
    if not stream:
        return "application/json", json.dumps(_response("completed", [item])).encode()
    empty = {**item, "status": "in_progress", "content": []}
    at = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response("in_progress", [])},
        {"type": "response.output_item.added", "output_index": 0, "item": empty},
        {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
        {"type": "response.output_text.delta", **at, "delta": TEXT, "logprobs": []},
        {"type": "response.output_text.done", **at, "text": TEXT, "logprobs": []},
        {"type": "response.content_part.done", **at, "part": part},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": _response("completed", [item])},
    ]
    numbered = [{**e, "sequence_number": n} for n, e in enumerate(events)]
    return "text/event-stream", _sse([(e["type"], e) for e in numbered])


_ROUTES = {"/v1/messages": _anthropic, "/v1/chat/completions": _chat, "/v1/responses": _responses}


def _handler(upstream: Upstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            path = self.path.split("?")[0]
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            upstream.requests.append((path, body))
            route = _ROUTES.get(path)
            if route is None:
                self.send_error(404)
                return
            kind, payload = route(bool(body.get("stream")))
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            return

    return Handler


@pytest.fixture(scope="session")
def _server() -> Iterator[Upstream]:
    upstream = Upstream(url="")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(upstream))
    upstream.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield upstream
    server.shutdown()
    server.server_close()


@pytest.fixture
def upstream(_server: Upstream) -> Upstream:
    _server.requests.clear()
    return _server


@pytest.fixture
def settings(tmp_path: Path) -> RawSettings:
    return RawSettings(originals_dir=tmp_path / "originals")


def sample_trajectories(per_source: int = 2, *, min_calls: int = 3) -> list[Trajectory]:
    """A few real runs from each source (the largest first), or none without ../shared."""
    by_source: dict[str, list[Path]] = {}
    for path in trajectory_paths():
        by_source.setdefault(path.parent.name, []).append(path)
    chosen: list[Trajectory] = []
    for paths in by_source.values():
        runs = [load_trajectory(p) for p in paths]
        runs = [r for r in runs if sum(m.role == "assistant" for m in r.messages) >= min_calls]
        runs.sort(key=lambda r: -sum(len(m.text) for m in r.messages))
        chosen += runs[:per_source]
    return chosen


def long_log(lines: int = 300, needle: str = "ERROR disk quota exceeded on /var/data") -> str:
    """A tool result worth shortening: similar lines, one error the model needs."""
    rows = [
        f"2024-05-0{i % 9 + 1} 12:{i % 60:02d} worker-{i % 7} processed batch {i} ok"
        for i in range(lines)
    ]
    rows.insert(lines // 2, needle)
    return "\n".join(rows)
