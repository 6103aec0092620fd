"""The tokenlean proxy under load: added latency and throughput for many conversations at once,
and a small request behind a 30 MB one, with one proxy process and with ``--workers``.

Usage (from the repository root)::

    python -m benchmarks.proxy_load [--concurrency 1 10 50] [--turns 10] [--workers 1 2]
        [--large-mb 30] [--trials 10]

Built on :mod:`benchmarks.proxy_latency` (its servers, bodies and timing; that benchmark measures
one request at a time). Each conversation is one Claude Code trajectory of
``shared/data/trajectories`` (cycled) opened by a message of its own, so no two conversations
share the rewrite's memo, sent as ``--turns`` requests spread evenly over the session (the
history grows turn by turn, re-sent whole as Claude Code does). For C concurrent conversations,
C client threads each send their conversation's turns back to back over keep-alive connections;
the same load runs direct to the fake upstream, then through the proxy. *Added* is, per request,
the proxied time minus the direct time of the same turn of the same conversation; throughput is
requests per second of wall time over the whole load.

*Behind a large one*: a small request (one command and its test log) sent 0.5 s after a body of
about ``--large-mb`` MB (a cold rewrite), against the small one alone.

Writes ``benchmarks/proxy_load.md`` (``--markdown`` to change the path).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from benchmarks.proxy_latency import (
    HERE,
    NONCE,
    TRAJECTORIES,
    _timed,
    _unique,
    history_body,
    large_template,
    long_result,
    percentile,
    servers,
    small_body,
)
from tokenlean.raw.bodies import anthropic_requests
from tokenlean.replay._formats import load_trajectory
from tokenlean.tokens import TiktokenCounter

Timings = dict[tuple[int, int], float]  # (conversation, turn) -> milliseconds


def conversations(turns: int) -> list[list[bytes]]:
    """Per trajectory, ``turns`` request bodies spread over its session, opened by a message
    holding :data:`NONCE` (each conversation puts its own number there)."""
    out = []
    for path in sorted(TRAJECTORIES.glob("*.json")):
        requests = list(anthropic_requests(load_trajectory(path).messages, model="claude-bench"))
        if len(requests) < turns:
            continue
        picked = [requests[round(i * (len(requests) - 1) / (turns - 1))] for i in range(turns)]
        opening = {"role": "user", "content": f"session {NONCE}"}
        bodies = [{**b, "messages": [opening, *b["messages"]]} for b in picked]
        out.append([json.dumps(b).encode() for b in bodies])
    return out


def run_load(
    url: str, convs: list[list[bytes]], concurrency: int, base: int
) -> tuple[Timings, float]:
    """Milliseconds per (conversation, turn), and the wall-clock seconds of the whole load;
    conversation ``n`` is numbered ``base + n`` in its opening message."""
    timings: Timings = {}
    lock = threading.Lock()

    def converse(n: int) -> None:
        with httpx.Client(timeout=300) as client:
            for turn, template in enumerate(convs[n % len(convs)]):
                elapsed = _timed(client, url, _unique(template, base + n))
                with lock:
                    timings[(n, turn)] = elapsed

    threads = [threading.Thread(target=converse, args=(n,)) for n in range(concurrency)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return timings, time.perf_counter() - start


def load_row(
    label: str, upstream: str, proxy: str, convs: list[list[bytes]], concurrency: int
) -> str:
    base = concurrency * 1000  # new numbers for each load: the proxy has memoised none of it
    direct, direct_wall = run_load(upstream, convs, concurrency, base)
    proxied, proxy_wall = run_load(proxy, convs, concurrency, base)
    added = [proxied[k] - direct[k] for k in direct]
    cells = [
        percentile(list(direct.values()), 50),
        percentile(list(direct.values()), 99),
        percentile(list(proxied.values()), 50),
        percentile(list(proxied.values()), 99),
        percentile(added, 50),
        percentile(added, 99),
    ]
    n = len(direct)
    shown = " | ".join(f"{c:.1f}" for c in cells)
    rates = f"{n / direct_wall:.0f} | {n / proxy_wall:.0f}"
    return f"| {label} | {concurrency} | {n} | {shown} | {rates} |"


def behind_large_row(label: str, proxy: str, template: bytes, result: str, trials: int) -> str:
    """The small request alone, then ``delay`` after a large one, ``trials`` times each."""
    alone: list[float] = []
    behind: list[float] = []
    with httpx.Client(timeout=300) as small, httpx.Client(timeout=300) as large:
        for n in range(3 + trials):  # three warm-up requests
            elapsed = _timed(small, proxy, small_body(result, n))
            if n >= 3:
                alone.append(elapsed)
        for n in range(trials):
            big = _unique(template, n)
            worker = threading.Thread(target=_timed, args=(large, proxy, big))
            worker.start()
            time.sleep(0.5)  # the large body is read and being rewritten by then
            behind.append(_timed(small, proxy, small_body(result, 1000 + n)))
            worker.join()
            time.sleep(1.0)  # counting the large one after its answer takes CPU: let it end
    cells = [percentile(alone, 50), percentile(alone, 95), percentile(behind, 50)]
    cells += [percentile(behind, 95), max(behind)]
    return f"| {label} | " + " | ".join(f"{c:.1f}" for c in cells) + " |"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--turns", type=int, default=10, help="requests per conversation")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--large-mb", type=float, default=30.0)
    parser.add_argument("--trials", type=int, default=10, help="small requests behind a large")
    parser.add_argument("--markdown", type=Path, default=HERE / "proxy_load.md")
    args = parser.parse_args(argv)
    if not TRAJECTORIES.is_dir():
        print(f"needs {TRAJECTORIES}", file=sys.stderr)
        return 2
    convs = conversations(args.turns)
    counter = TiktokenCounter("o200k_base", vocab_path=TRAJECTORIES.parents[2] / "tokenizers")
    history, _ = history_body(200_000, counter)
    result = long_result()
    template = large_template(history, result, args.large_mb)
    load_before = os.getloadavg()[0]
    loads, larges = [], []
    for workers in args.workers:
        label = f"{workers} process{'es' if workers > 1 else ''}"
        extra = ["--workers", str(workers)] if workers > 1 else []
        with servers(False, extra) as (upstream, proxy, _pid):
            for concurrency in args.concurrency:
                loads.append(load_row(label, upstream, proxy, convs, concurrency))
                print(loads[-1], flush=True)
            larges.append(behind_large_row(label, proxy, template, result, args.trials))
            print(larges[-1], flush=True)
    sizes = sorted(len(b) for conv in convs for b in conv)
    facts = {
        "command": "python -m benchmarks.proxy_load " + " ".join(argv or sys.argv[1:]),
        "sessions": len(convs),
        "body_p50": sizes[len(sizes) // 2],
        "body_max": sizes[-1],
        "large": len(template),
        "small": len(small_body(result, 0)),
        "load": (load_before, os.getloadavg()[0]),
    }
    args.markdown.write_text(render(args, loads, larges, facts))
    print(f"written to {args.markdown}")
    return 0


def render(
    args: argparse.Namespace, loads: list[str], larges: list[str], facts: dict[str, Any]
) -> str:
    start, end = facts["load"]
    lines = [
        "# The proxy under load",
        "",
        f"Command: `{facts['command'].strip()}` (run on {time.strftime('%Y-%m-%d')})",
        "",
        f"Conversations: {facts['sessions']} Claude Code sessions of "
        "`shared/data/trajectories/openagents_claude_code`, cycled, each opened by a message of "
        f"its own (no two share the rewrite's memo), {args.turns} turns each spread over the "
        f"session (bodies p50 {facts['body_p50']:,} bytes, max {facts['body_max']:,}). C client "
        "threads send their conversations' turns back to back, first direct to the fake "
        "upstream, then through `tokenlean proxy` (the default rewrite). Milliseconds per "
        "request from sending the body to the end of the reply; *added* is proxied minus direct "
        "for the same turn of the same conversation; throughput is requests per second of wall "
        "time.",
        "",
        "| proxy | concurrent conversations | requests | direct p50 | direct p99 | proxy p50 "
        "| proxy p99 | added p50 | added p99 | direct req/s | proxy req/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        *loads,
        "",
        "## A small request behind a large one",
        "",
        f"Small: a new conversation's second request ({facts['small']:,} bytes, a test log the "
        f"rewrite shortens); large: {facts['large']:,} bytes, opened by a new message each time "
        f"so its rewrite starts cold. Each of {args.trials} trials sends the large body, waits "
        "0.5 s, and times the small one.",
        "",
        "| proxy | small alone p50 | small alone p95 | small behind large p50 "
        "| small behind large p95 | small behind large max |",
        "|---|---:|---:|---:|---:|---:|",
        *larges,
        "",
        f"Machine: {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} "
        f"cores shared with other work (load average {start:.1f} at the start, {end:.1f} at the "
        "end: wall-clock figures carry that noise). The fake upstream, the proxy and the client "
        "each run in their own processes on 127.0.0.1; the client's threads share one "
        "interpreter, direct and proxied alike. With several processes each has its own rewrite "
        "threads, and the kernel spreads connections over them.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
