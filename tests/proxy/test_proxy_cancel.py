"""A rewrite whose client has gone stops between turns: a client that disconnects from a real
socket while its long history is being rewritten leaves no rewrite running to the end, no
originals written for a body no one will send, and nothing sent upstream."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from tokenlean._cancel import cancel_requested
from tokenlean.raw import RawSettings, rewrite_request
from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import PASSING_LOG, TOKEN, ProxyFactory, wait_for, with_token

#: Bounds a test that would otherwise hang; not a speed assertion.
GENEROUS = 30.0
TURNS = 12


class HeldCounter:
    """Counts characters; its first count waits until the client has gone (the proxy has
    asked the rewrite to stop), so the client leaves mid-rewrite whatever the machine's speed."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.counts = 0

    def count(self, text: str) -> int:
        self.counts += 1
        if not self.started.is_set():
            self.started.set()
            wait_for(cancel_requested, GENEROUS)
        return len(text)


def _history() -> dict[str, Any]:
    """A conversation of ``TURNS`` bash calls, each answered by a long test log."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "run the tests"}]
    for i in range(TURNS):
        call_id = f"t{i}"
        call = {"type": "tool_use", "id": call_id, "name": "bash", "input": {"cmd": f"pytest {i}"}}
        log = f"run {i}\n{PASSING_LOG}"
        result = {"type": "tool_result", "tool_use_id": call_id, "content": log}
        messages += [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
    return {"model": "claude-test", "max_tokens": 8, "messages": messages}


def _send_and_leave(url: str, body: bytes, started: threading.Event) -> None:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=GENEROUS) as sock:
        head = (
            f"POST /t/{TOKEN}/v1/messages HTTP/1.1\r\nhost: {host}\r\n"
            "content-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode() + body)
        assert started.wait(GENEROUS)  # the rewrite is running
    # closed: the client has gone


def _stats(url: str) -> dict[str, Any]:
    reply = httpx.get(f"{url}/tokenlean/stats")
    reply.raise_for_status()
    return dict(reply.json())


def test_a_rewrite_stops_when_its_client_disconnects(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
):
    body = _history()
    counter = HeldCounter()
    settings = RawSettings(originals_dir=tmp_path / "originals", counter=counter)
    # the same rewrite with no one leaving keeps originals (so an empty folder means stopped)
    done = rewrite_request("anthropic", body, settings=RawSettings(originals_dir=tmp_path / "x"))
    assert done is not None and done.results_shortened == TURNS

    def rewrite(api: Any, sent: Mapping[str, Any]) -> Any:
        return rewrite_request(api, sent, settings=settings)

    proxy = make_proxy(rewriter=rewrite, token=TOKEN)
    _send_and_leave(proxy.url, json.dumps(body).encode(), counter.started)
    url = with_token(proxy)
    assert wait_for(lambda: _stats(url)["rewrites_cancelled"] == 1, GENEROUS)
    assert upstream.requests == []
    kept = tmp_path / "originals"
    assert not kept.exists() or not [p for p in kept.rglob("*") if p.is_file()]
    # the proxy goes on serving: the next client's body is rewritten and sent
    reply = httpx.post(f"{url}/v1/messages", json=body, headers={"x-api-key": "k"})
    assert reply.status_code == 200
    assert len(upstream.requests) == 1
    assert _stats(url)["rewrites_cancelled"] == 1
