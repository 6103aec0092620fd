"""Rewrites run concurrently: a small request never waits for a large one's rewrite to end.

Every test drives the real proxy over a real socket and injects a rewriter that records when it
is entered and left; they assert the order of those events, never how long anything took.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from tokenlean.proxy import ProxySettings, default_rewriter
from tokenlean.proxy._forward import LARGE_BODY_BYTES
from tokenlean.raw import RawSettings, rewrite_request
from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import MARKER, Outcome, ProxyFactory, wait_for

#: Bounds a wait that only a serialising proxy would make long; not a speed assertion.
PATIENCE = 10.0

Events = list[tuple[str, str]]


def _post(url: str, body: Mapping[str, Any]) -> httpx.Response:
    headers = {"content-type": "application/json"}
    return httpx.post(url + "/v1/messages", json=body, headers=headers, timeout=3 * PATIENCE)


def _body(name: str, size: int = 0) -> dict[str, Any]:
    """A conversation named by its first message, with a result of ``size`` bytes to rewrite."""
    result = MARKER + " " + "x" * size
    return {
        "model": "m",
        "max_tokens": 8,
        "messages": [
            {"role": "user", "content": name},
            {"role": "assistant", "content": "running it"},
            {"role": "user", "content": result},
        ],
    }


def _recording(events: Events, inside: Callable[[str], object]) -> Any:
    """A rewriter that upper-cases the marker, calling ``inside(name)`` between its enter and
    exit events (the lock makes appends from several threads safe to read in order)."""
    lock = threading.Lock()

    def rewrite(api: Any, body: Mapping[str, Any]) -> Outcome:
        name = body["messages"][0]["content"]
        with lock:
            events.append(("enter", name))
        inside(name)
        with lock:
            events.append(("exit", name))
        messages = [*body["messages"][:-1], {"role": "user", "content": MARKER.upper()}]
        return Outcome({**body, "messages": messages}, 10, 5, results_shortened=1)

    return rewrite


def _in_background(url: str, body: Mapping[str, Any], replies: list[int]) -> threading.Thread:
    thread = threading.Thread(target=lambda: replies.append(_post(url, body).status_code))
    thread.start()
    return thread


def _rewritten(upstream: FakeUpstream, name: str) -> bool:
    bodies = [b for b in upstream.bodies("/v1/messages") if b["messages"][0]["content"] == name]
    return len(bodies) == 1 and bodies[0]["messages"][-1]["content"] == MARKER.upper()


def test_two_rewrites_run_at_the_same_time(make_proxy: ProxyFactory, upstream: FakeUpstream):
    """Each rewrite waits inside the rewriter until the other one is inside too: a proxy that
    rewrote one body at a time would break the barrier (and forward both unchanged)."""
    events: Events = []
    both_inside = threading.Barrier(2, timeout=PATIENCE)
    proxy = make_proxy(rewriter=_recording(events, lambda name: both_inside.wait()))
    replies: list[int] = []
    threads = [_in_background(proxy.url, _body(name, 100_000), replies) for name in ("a", "b")]
    for thread in threads:
        thread.join()
    assert replies == [200, 200]
    assert [kind for kind, _ in events] == ["enter", "enter", "exit", "exit"]
    assert _rewritten(upstream, "a") and _rewritten(upstream, "b")


def test_a_small_request_is_answered_while_a_large_one_is_being_rewritten(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    """The large body's rewrite does not end until the small request has been answered."""
    events: Events = []
    small_answered = threading.Event()

    def inside(name: str) -> None:
        if name == "large":
            small_answered.wait(PATIENCE)

    proxy = make_proxy(rewriter=_recording(events, inside))
    replies: list[int] = []
    large = _in_background(proxy.url, _body("large", 4_000_000), replies)
    assert wait_for(lambda: ("enter", "large") in events, PATIENCE)
    assert _post(proxy.url, _body("small")).status_code == 200
    events.append(("answered", "small"))
    small_answered.set()
    large.join()
    assert replies == [200]
    assert events == [
        ("enter", "large"),
        ("enter", "small"),
        ("exit", "small"),
        ("answered", "small"),
        ("exit", "large"),
    ]
    assert _rewritten(upstream, "small") and _rewritten(upstream, "large")


def test_rewrite_threads_bounds_how_many_run_at_once(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    """With one rewrite thread the first rewrite waits in vain for the second to join it; the
    second enters only after the first has left (both go upstream unchanged: fail-open)."""
    events: Events = []
    both_inside = threading.Barrier(2, timeout=1.0)
    proxy = make_proxy(
        rewriter=_recording(events, lambda name: both_inside.wait()), rewrite_threads=1
    )
    replies: list[int] = []
    first = _in_background(proxy.url, _body("first"), replies)
    assert wait_for(lambda: ("enter", "first") in events, PATIENCE)
    second = _in_background(proxy.url, _body("second"), replies)
    for thread in (first, second):
        thread.join()
    assert replies == [200, 200]
    assert events == [("enter", "first"), ("enter", "second")]  # the barrier broke both
    assert not _rewritten(upstream, "first") and not _rewritten(upstream, "second")


def test_rewrite_threads_must_be_positive():
    with pytest.raises(ValueError, match="rewrite_threads"):
        ProxySettings(rewrite_threads=0)
    assert ProxySettings().rewrite_threads >= 2


def _conversation(n: int) -> dict[str, Any]:
    log = "".join(f"case {n}.{i} FAILED: expected {i} got {i + n}\n" for i in range(400))
    messages: list[Any] = [{"role": "user", "content": f"task {n}"}]
    for turn in range(3):
        call = {"type": "tool_use", "id": f"t{n}_{turn}", "name": "bash", "input": {"cmd": "make"}}
        result = {"type": "tool_result", "tool_use_id": call["id"], "content": log}
        messages += [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
    return {"model": "m", "max_tokens": 8, "messages": messages}


def test_concurrent_rewrites_send_what_one_at_a_time_sends(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
):
    """The default rewrite, six conversations at once: each body goes upstream exactly as
    ``tokenlean.raw`` rewrites it alone (its memo is shared and thread-safe)."""
    proxy = make_proxy(rewriter=default_rewriter(tmp_path), rewrite_threads=6)
    bodies = [_conversation(n) for n in range(6)]
    replies: list[int] = []
    for thread in [_in_background(proxy.url, body, replies) for body in bodies]:
        thread.join()
    assert replies == [200] * 6
    sent = {r.json()["messages"][0]["content"]: r.body for r in upstream.requests}
    alone = RawSettings(originals_dir=tmp_path)  # a planner of its own: a cold memo
    for body in bodies:
        expected = rewrite_request("anthropic", body, settings=alone)
        assert expected is not None
        assert (
            sent[body["messages"][0]["content"]]
            == json.dumps(expected.body, separators=(",", ":")).encode()
        )


def test_large_bodies_are_rewritten_one_at_a_time_beside_the_small_ones(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    """Two large bodies cannot take both rewrite threads: the second waits for the large lane,
    and a small request sent meanwhile is rewritten and answered before either large one ends
    (with one pool, both large rewrites held its two threads and the small one waited)."""
    events: Events = []
    small_answered = threading.Event()

    def inside(name: str) -> None:
        if name.startswith("large"):
            small_answered.wait(PATIENCE)

    proxy = make_proxy(rewriter=_recording(events, inside), rewrite_threads=2)
    replies: list[int] = []
    size = LARGE_BODY_BYTES + 1000
    first = _in_background(proxy.url, _body("large-a", size), replies)
    assert wait_for(lambda: ("enter", "large-a") in events, PATIENCE)
    second = _in_background(proxy.url, _body("large-b", size), replies)
    assert not wait_for(lambda: ("enter", "large-b") in events, 1.0)  # queued for the lane
    assert _post(proxy.url, _body("small")).status_code == 200
    events.append(("answered", "small"))
    small_answered.set()
    for thread in (first, second):
        thread.join()
    assert replies == [200, 200]
    small = [("enter", "small"), ("exit", "small"), ("answered", "small")]
    assert events[:4] == [("enter", "large-a"), *small]
    assert events.index(("enter", "large-b")) > events.index(("exit", "large-a"))
    assert all(_rewritten(upstream, name) for name in ("small", "large-a", "large-b"))


def test_a_large_body_waiting_for_the_lane_is_dropped_when_its_client_leaves(
    make_proxy: ProxyFactory, upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
):
    """The client of the second large body gives up while the first holds the lane: the proxy
    drops the request then, not when the lane frees; it is never rewritten nor sent upstream."""
    caplog.set_level(logging.DEBUG, logger="tokenlean.proxy")
    events: Events = []
    release = threading.Event()

    def inside(name: str) -> None:
        if name == "large-a":
            release.wait(PATIENCE)

    def dropped() -> bool:
        return any("client left" in record.getMessage() for record in caplog.records)

    proxy = make_proxy(rewriter=_recording(events, inside))
    replies: list[int] = []
    size = LARGE_BODY_BYTES + 1000
    first = _in_background(proxy.url, _body("large-a", size), replies)
    assert wait_for(lambda: ("enter", "large-a") in events, PATIENCE)
    impatient = httpx.Timeout(PATIENCE, read=1.0)  # gives up while its body waits
    try:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(proxy.url + "/v1/messages", json=_body("large-b", size), timeout=impatient)
        assert wait_for(dropped, PATIENCE)  # while the first still holds the lane
    finally:
        release.set()
    first.join()
    assert replies == [200]
    assert ("enter", "large-b") not in events
    names = [b["messages"][0]["content"] for b in upstream.bodies("/v1/messages")]
    assert names == ["large-a"]
