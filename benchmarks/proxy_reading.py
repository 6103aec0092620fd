"""What the proxy's reading of a body costs per request of a growing conversation (CPU time in
this process).

Run from the repository root::

    python -m benchmarks.proxy_reading [--bytes 845000] [--turns 60]

Builds the Anthropic requests of the session :mod:`benchmarks.proxy_latency` re-sends (its
Claude Code trajectories concatenated) as Claude Code sends them: each request is the history
so far with the cache breakpoint on its newest message, so the newest message of the request
before comes again without it. Takes the last ``--turns`` requests up to ``--bytes`` of JSON
and reads them in order as the proxy does: the body scanned (``read_body``), its messages read
into the neutral view (as frozen bodies), and its blocks counted for the statistics. Prints each
step's CPU per request over the turns after the first ten (their warm-up). The proxy's own
benchmark measures the whole request, HTTP included, on one body re-sent as it was.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks.proxy_latency import TRAJECTORIES
from tokenlean.proxy._scan import ScannedBody, read_body
from tokenlean.proxy._sessions import BlockCounter
from tokenlean.raw import _anthropic, frozen_bodies
from tokenlean.raw.bodies import anthropic_requests
from tokenlean.replay._formats import load_trajectory
from tokenlean.transcript import Message

WARM_UP = 10


def conversation(limit: int, turns: int) -> list[bytes]:
    """The last ``turns`` request bodies of the session, each at most ``limit`` bytes."""
    messages: list[Message] = []
    for path in sorted(TRAJECTORIES.glob("*.json")):
        messages.extend(load_trajectory(path).messages)
    bodies: list[bytes] = []
    for request in anthropic_requests(messages, model="claude-bench"):
        raw = json.dumps(request).encode()
        if len(raw) > limit:
            break
        bodies.append(raw)
    return bodies[-turns:]


def read_in_turn(bodies: list[bytes]) -> dict[str, float]:
    """Milliseconds of CPU per request of each step, over the bodies after the warm-up."""
    counter = BlockCounter()
    spent = {"scan": 0.0, "view": 0.0, "counting": 0.0}

    def timed(step: str, work: Callable[[], Any], measured: bool) -> Any:
        start = time.process_time()
        out = work()
        spent[step] += (time.process_time() - start) * measured
        return out

    for n, raw in enumerate(bodies):
        measured = n >= WARM_UP
        scanned = timed("scan", lambda raw=raw: read_body(raw, "messages"), measured)
        if not isinstance(scanned, ScannedBody):
            raise ValueError(f"request {n} is not a JSON object: {scanned}")
        with frozen_bodies():
            timed("view", lambda s=scanned: _anthropic.read(s.values), measured)
        timed("counting", lambda s=scanned: counter.blocks("anthropic", s), measured)
    count = max(1, len(bodies) - WARM_UP)
    return {step: 1000 * seconds / count for step, seconds in spent.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=int, default=845_000, help="the largest body's size")
    parser.add_argument("--turns", type=int, default=60, help="requests read, warm-up included")
    args = parser.parse_args()
    if not TRAJECTORIES.is_dir():
        print(f"needs {TRAJECTORIES}", file=sys.stderr)
        return 2
    bodies = conversation(args.bytes, args.turns)
    if len(bodies) <= WARM_UP:
        print(f"only {len(bodies)} requests fit in {args.bytes:,} bytes", file=sys.stderr)
        return 2
    per_request = read_in_turn(bodies)
    print(
        f"{len(bodies) - WARM_UP} requests of {len(bodies[WARM_UP]):,} to {len(bodies[-1]):,} "
        f"bytes, after {WARM_UP} more; CPU ms per request:"
    )
    print(", ".join(f"{step} {ms:.3f}" for step, ms in per_request.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
