"""What the proxy's reading of a body costs per request of a growing conversation (CPU time in
this process).

Run from the repository root::

    python -m benchmarks.proxy_reading [--bytes 845000] [--turns 60] [--api anthropic]

Builds the requests of the session :mod:`benchmarks.proxy_latency` re-sends (its Claude Code
trajectories concatenated). For ``--api anthropic`` (the default) they are sent as Claude Code
sends them: each request is the history so far with the cache breakpoint on its newest message,
so the newest message of the request before comes again without it. For ``openai_chat``,
``openai_responses`` (as Codex sends) and ``gemini`` (as gemini-cli sends), each request is the
history so far in that API's shape. Takes the last ``--turns`` requests up to ``--bytes`` of
JSON and reads them in order as the proxy does: the body scanned (``read_body``), its items read
into the neutral view (as frozen bodies), and its blocks counted for the statistics. Prints each
step's CPU per request over the turns after the first ten (their warm-up). The proxy's own
benchmark measures the whole request, HTTP included, on one Anthropic body re-sent as it was.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.proxy_latency import TRAJECTORIES
from tokenlean.proxy._scan import ScannedBody, read_body
from tokenlean.proxy._sessions import BlockCounter
from tokenlean.raw import _READERS, Api, frozen_bodies, list_key
from tokenlean.raw.bodies import anthropic_requests, body, call_points
from tokenlean.replay._formats import load_trajectory
from tokenlean.transcript import Message

WARM_UP = 10


APIS: tuple[Api, ...] = ("anthropic", "openai_chat", "openai_responses", "gemini")


def requests(api: Api, messages: list[Message]) -> Iterator[dict[str, Any]]:
    """The body sent before each assistant turn of ``messages``, oldest first."""
    if api == "anthropic":
        yield from anthropic_requests(messages, model="claude-bench")
        return
    for end in call_points(messages):
        if end:
            yield body(api, messages[:end], model="bench")


def conversation(limit: int, turns: int, api: Api = "anthropic") -> list[bytes]:
    """The last ``turns`` request bodies of the session for ``api``, each at most ``limit``
    bytes."""
    messages: list[Message] = []
    for path in sorted(TRAJECTORIES.glob("*.json")):
        messages.extend(load_trajectory(path).messages)
    bodies: list[bytes] = []
    for request in requests(api, messages):
        raw = json.dumps(request).encode()
        if len(raw) > limit:
            break
        bodies.append(raw)
    return bodies[-turns:]


def read_in_turn(bodies: list[bytes], api: Api = "anthropic") -> dict[str, float]:
    """Milliseconds of CPU per request of each step, over the bodies after the warm-up."""
    counter, reader, key = BlockCounter(), _READERS[api], list_key(api)
    spent = {"scan": 0.0, "view": 0.0, "counting": 0.0}

    def timed(step: str, work: Callable[[], Any], measured: bool) -> Any:
        start = time.process_time()
        out = work()
        spent[step] += (time.process_time() - start) * measured
        return out

    for n, raw in enumerate(bodies):
        measured = n >= WARM_UP
        scanned = timed("scan", lambda raw=raw: read_body(raw, key), measured)
        if not isinstance(scanned, ScannedBody):
            raise ValueError(f"request {n} is not a JSON object: {scanned}")
        with frozen_bodies():
            timed("view", lambda s=scanned: reader(s.values), measured)
        timed("counting", lambda s=scanned: counter.blocks(api, s), measured)
    count = max(1, len(bodies) - WARM_UP)
    return {step: 1000 * seconds / count for step, seconds in spent.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=int, default=845_000, help="the largest body's size")
    parser.add_argument("--turns", type=int, default=60, help="requests read, warm-up included")
    parser.add_argument("--api", choices=APIS, default="anthropic", help="the bodies' API")
    args = parser.parse_args()
    if not TRAJECTORIES.is_dir():
        print(f"needs {TRAJECTORIES}", file=sys.stderr)
        return 2
    bodies = conversation(args.bytes, args.turns, args.api)
    if len(bodies) <= WARM_UP:
        print(f"only {len(bodies)} requests fit in {args.bytes:,} bytes", file=sys.stderr)
        return 2
    per_request = read_in_turn(bodies, args.api)
    print(
        f"{len(bodies) - WARM_UP} requests of {len(bodies[WARM_UP]):,} to {len(bodies[-1]):,} "
        f"bytes, after {WARM_UP} more; CPU ms per request:"
    )
    print(", ".join(f"{step} {ms:.3f}" for step, ms in per_request.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
