"""The originals folder behind the real proxy stays under its cap, and a marker of a conversation
under way still names a file that is there: the proxy puts every original of a history on each
request, before the body goes upstream."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import ProxyFactory, log_turn

_FILE = re.compile(r"full output: (\S+\.txt) lines")


def _turn(words: str, call_id: str) -> dict[str, Any]:
    """An Anthropic body whose last turn is a long log of its own (``words`` make it unique)."""
    body = log_turn(call_id=call_id)
    result = body["messages"][2]["content"][0]
    result["content"] = "".join(f"{words} case {i} PASSED in 0.0{i % 10}s\n" for i in range(300))
    return body


def _then(body: dict[str, Any], question: str) -> dict[str, Any]:
    """``body`` one exchange later, as a client re-sends its history."""
    messages = [
        *body["messages"],
        {"role": "assistant", "content": "all passed"},
        {"role": "user", "content": question},
    ]
    return {**body, "messages": messages}


def _marked_file(upstream: FakeUpstream) -> Path:
    """The file the marker of the body upstream received last names."""
    *_, last = upstream.bodies("/v1/messages")
    (name,) = set(_FILE.findall(str(last)))
    return Path(name)


def _eventually(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Whether ``condition`` holds within ``timeout`` seconds (a sweep a put started is done)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_live_conversations_marker_resolves_after_a_sweep_hit_the_cap(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
) -> None:
    first, other = _turn("alpha", "a1"), _turn("beta", "b1")
    size = len(_turn("alpha", "a1")["messages"][2]["content"][0]["content"])
    cap = size * 3 // 2  # room for one original, not two
    proxy = make_proxy("default", originals_dir=tmp_path, originals_max_bytes=cap)

    with httpx.Client(base_url=proxy.url, timeout=30) as client:
        assert client.post("/v1/messages", json=first).status_code == 200
        kept = _marked_file(upstream)
        text = kept.read_text()
        _age(kept, 3600)  # an hour later, another conversation writes
        assert client.post("/v1/messages", json=other).status_code == 200
        # the sweep (on a thread of its own) hit the cap: the least recently used went
        pruned = tmp_path / ".pruned"
        assert _eventually(lambda: not kept.exists() and pruned.exists())
        assert pruned.read_text().split() == [kept.stem]

        # The first conversation goes on: its history still holds the marker, and the file is
        # written again before the body naming it goes upstream.
        assert client.post("/v1/messages", json=_then(first, "and now?")).status_code == 200

    assert _marked_file(upstream) == kept
    assert kept.read_text() == text
    # Over the cap now, but both were used in the last minutes: a marker may name either.
    assert sum(p.stat().st_size for p in tmp_path.glob("*.txt")) > cap
    assert len(list(tmp_path.glob("*.txt"))) == 2
