"""An A/B week in a few minutes: recorded Claude Code sessions replayed through ``tokenlean proxy
--ab 0.5`` against the fake provider, then ``tokenlean ab report`` on the proxy's session log.

Usage (from the repository root)::

    python -m benchmarks.ab_replay [--sessions 60] [--turns 12] [--share 0.5]

Each session is one trajectory of the Claude Code sources in ``shared/data/trajectories``
(``openagents_claude_code``, ``entire_claude_code``, ``claude_code_2_1_2xx``), sent as Claude
Code sends it: one request per model call with the whole recorded history (``--turns`` calls
spread evenly over the session), its session id in ``metadata.user_id``. Sessions run one after
the other, each call after the previous one's answer.

The fake provider answers like Anthropic's prompt cache would bill it: per session, the longest
byte prefix shared with one of its earlier requests is *read* from the cache and the rest
*written* (each request carries a breakpoint on its last message), at four bytes a token; the
output is the recorded assistant turn's size at four bytes a token (sent by the client in a
header the proxy passes on). So the report's costs are those of the cache rule on the bytes
each arm really sent upstream, priced as ``claude-sonnet-4-5`` by the genai-prices catalogue.

Writes ``benchmarks/ab_replay.md`` (``--markdown`` to change the path).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from benchmarks.proxy_latency import HEADERS, SHARED, _free_port, _wait_until_up
from tokenlean.raw.bodies import anthropic_requests
from tokenlean.replay import load_trajectory
from tokenlean.testing.upstream import FakeUpstream, Recorded, Reply, anthropic_message, json_reply

HERE = Path(__file__).parent
SOURCES = ("openagents_claude_code", "entire_claude_code", "claude_code_2_1_2xx")
MODEL = "claude-sonnet-4-5"
OUTPUT_HEADER = "x-replay-output-tokens"
BYTES_PER_TOKEN = 4


def _shared_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix of ``a`` and ``b`` (binary search over slice compares)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


class CachingProvider:
    """The fake provider's script: Anthropic answers whose usage follows the prompt cache."""

    def __init__(self) -> None:
        self._seen: dict[str, list[bytes]] = {}
        self._lock = threading.Lock()

    def __call__(self, request: Recorded) -> Reply:
        body = request.json()
        session = str(body.get("metadata", {}).get("user_id"))
        with self._lock:
            earlier = self._seen.setdefault(session, [])
            cached = max((_shared_prefix(request.body, e) for e in earlier), default=0)
            earlier.append(request.body)
        usage = {
            "input_tokens": 0,
            "cache_read_input_tokens": cached // BYTES_PER_TOKEN,
            "cache_creation_input_tokens": (len(request.body) - cached) // BYTES_PER_TOKEN,
            "output_tokens": int(request.header(OUTPUT_HEADER) or 1),
        }
        return json_reply(anthropic_message("ok", model=MODEL, usage=usage))


def sessions(count: int, turns: int) -> Iterator[tuple[str, list[tuple[bytes, int]]]]:
    """Per session, its id and ``turns`` calls: (body, output tokens of the recorded reply)."""
    paths = sorted(p for s in SOURCES for p in (SHARED / "data/trajectories" / s).glob("*.json"))
    for path in paths[:count]:
        requests = list(anthropic_requests(load_trajectory(path).messages, model=MODEL))
        n = len(requests)
        picked = (
            range(n) if n <= turns else [round(i * (n - 1) / (turns - 1)) for i in range(turns)]
        )
        user = f"replay-{path.stem}"
        yield user, [_call(requests, k, user) for k in picked]


def _call(requests: list[dict[str, Any]], k: int, user: str) -> tuple[bytes, int]:
    """Call ``k``'s body, and the size of its recorded reply: the message the next call's
    history adds after this call's (a short reply assumed for the last call)."""
    body, sent = requests[k], len(requests[k]["messages"])
    later = requests[k + 1]["messages"] if k + 1 < len(requests) else []
    reply = json.dumps(later[sent]["content"]) if len(later) > sent else "x" * 200
    output = max(len(reply) // BYTES_PER_TOKEN, 1)
    return json.dumps({**body, "metadata": {"user_id": user}}).encode(), output


def replay(url: str, count: int, turns: int) -> int:
    sent = 0
    with httpx.Client(timeout=600) as client:
        for _, calls in sessions(count, turns):
            for body, output in calls:
                headers = {**HEADERS, OUTPUT_HEADER: str(output)}
                reply = client.post(url + "/v1/messages", content=body, headers=headers)
                reply.raise_for_status()
                sent += 1
    return sent


def run(args: argparse.Namespace, log: Path) -> tuple[int, str, float]:
    """Requests sent, the proxy's A/B metrics, seconds taken."""
    with FakeUpstream(script=CachingProvider()) as upstream, tempfile.TemporaryDirectory() as tmp:
        port = _free_port()
        command = [sys.executable, "-m", "tokenlean.cli", "proxy", "--port", str(port), "-q"]
        command += ["--upstream", upstream.url, "--originals", tmp, "--ab", str(args.share)]
        command += ["--ab-log", str(log), "--salt", args.salt]
        proxy = subprocess.Popen(command, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(url)
            start = time.perf_counter()
            sent = replay(url, args.sessions, args.turns)
            seconds = time.perf_counter() - start
            metrics = httpx.get(url + "/metrics", timeout=60).text
        finally:
            proxy.send_signal(signal.SIGINT)  # the open sessions are finished and logged
            proxy.wait(120)
    ab = [line for line in metrics.splitlines() if line.startswith("tokenlean_ab_")]
    return sent, "\n".join(ab), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=60)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--share", type=float, default=0.5)
    parser.add_argument("--salt", default="ab-replay-salt", help="fixed: the same arms each run")
    parser.add_argument("--markdown", type=Path, default=HERE / "ab_replay.md")
    args = parser.parse_args()
    if not (SHARED / "data/trajectories").is_dir():
        print(f"needs {SHARED}/data/trajectories", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "ab-sessions.jsonl"
        sent, metrics, seconds = run(args, log)
        command = [sys.executable, "-m", "tokenlean.cli", "ab", "report", str(log)]
        report = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    write_markdown(args, sent, seconds, metrics, report)
    print(report)
    return 0


def write_markdown(
    args: argparse.Namespace, sent: int, seconds: float, metrics: str, report: str
) -> None:
    sources = ", ".join(f"`{s}`" for s in SOURCES)
    text = f"""# A/B arms on replayed sessions

```
python -m benchmarks.ab_replay --sessions {args.sessions} --turns {args.turns} --share {args.share}
```

{sent} requests in {seconds:.0f} s on {os.cpu_count()} CPUs shared with other work. The first
{args.sessions} Claude Code sessions of {sources},
{args.turns} calls each (spread over the session, the whole history re-sent each time), went
through `tokenlean proxy --ab {args.share} --salt {args.salt} --ab-log LOG` in front of the
fake provider, which bills Anthropic's prompt-cache rule on the bytes each arm sent (see the
script's docstring); then
`tokenlean ab report LOG`:

```
{report.rstrip()}
```

The proxy's `/metrics` for the arms at the end of the run:

```
{metrics}
```

The arms hold different sessions (the salted hash picks them), so the difference mixes what
the rewrite saves with which sessions fell in which arm; Welch's interval accounts for that
and narrows as sessions accrue. Sessions differ far more from one another than the arms do:
with fewer sessions, the report says how many more per arm would tell a 10% difference.
"""
    args.markdown.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
