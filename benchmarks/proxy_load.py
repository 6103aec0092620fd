"""Side by side under load, in one run on the same fake upstream: direct, ``tokenlean proxy``,
tokenlean inside a LiteLLM proxy, and a LiteLLM proxy forwarding only (the LiteLLM rows are
skipped, saying why, without ``make .venv-litellm/.installed``).

Usage (from the repository root)::

    python -m benchmarks.proxy_load [--concurrency 1 10 50] [--turns 10] [--large-mb 30]
        [--trials 5] [--no-litellm]

Built on :mod:`benchmarks.proxy_latency` (its servers, bodies and timing; that benchmark measures
one request at a time). Each conversation is one Claude Code trajectory of
``shared/data/trajectories`` (cycled) opened by a message of its own, so no two conversations
share the rewrite's memo, sent as ``--turns`` requests spread evenly over the session (the
history grows turn by turn, re-sent whole as Claude Code does). For C concurrent conversations,
C client threads each send their conversation's turns back to back over keep-alive connections;
the same load runs direct to the fake upstream, then through the proxy. *Added* is, per request,
the proxied time minus the direct time of the same turn of the same conversation; throughput is
requests per second of wall time over the whole load; CPU is the serving process's (and its
children's) user plus system time over the load, per request.

*Large*: one cold body of about ``--large-mb`` MB, each target ``--trials`` times. *Behind two
large*: a small request (one command and its test log) sent 0.5 s after two such bodies, against
the small one alone.

Writes ``benchmarks/proxy_load.md`` (``--markdown`` to change the path); what an earlier file
holds after its generated part (hand-written sections, from the paragraph after its ``Machine:``
one) is kept at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from benchmarks._gateways import Target, targets, tree_cpu
from benchmarks.proxy_latency import (
    HERE,
    NONCE,
    TRAJECTORIES,
    _unique,
    history_body,
    large_template,
    long_result,
    percentile,
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


def _timed(client: httpx.Client, target: Target, content: bytes) -> float:
    start = time.perf_counter()
    path = "/v1/messages?beta=true"
    reply = client.post(target.url + path, content=content, headers=target.headers)
    elapsed = time.perf_counter() - start
    reply.raise_for_status()
    return elapsed * 1000


def run_load(
    target: Target, convs: list[list[bytes]], concurrency: int, base: int
) -> tuple[Timings, float]:
    """Milliseconds per (conversation, turn), and the wall-clock seconds of the whole load;
    conversation ``n`` is numbered ``base + n`` in its opening message."""
    timings: Timings = {}
    lock = threading.Lock()

    def converse(n: int) -> None:
        with httpx.Client(timeout=300) as client:
            for turn, template in enumerate(convs[n % len(convs)]):
                elapsed = _timed(client, target, _unique(template, base + n))
                with lock:
                    timings[(n, turn)] = elapsed

    threads = [threading.Thread(target=converse, args=(n,)) for n in range(concurrency)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return timings, time.perf_counter() - start


def _cells(values: Sequence[float]) -> str:
    return " | ".join(f"{v:.1f}" for v in values)


def load_rows(found: list[Target], convs: list[list[bytes]], concurrency: int) -> list[str]:
    """One row per target: its p50/p99, added over direct, requests/s, CPU per request."""
    rows: list[str] = []
    direct: Timings = {}
    for i, target in enumerate(found):
        if target.missing:
            rows.append(f"| {target.label} | {concurrency} | skipped: {target.missing} |")
            continue
        base = (concurrency * 10 + i) * 1000  # new numbers: nothing of it is memoised
        cpu = tree_cpu(target.pid)
        timings, wall = run_load(target, convs, concurrency, base)
        time.sleep(0.5)  # what the proxy counts after the answers is its CPU too
        per = 1000 * (tree_cpu(target.pid) - cpu) / len(timings)
        direct = direct or timings
        added = [timings[k] - direct[k] for k in direct]
        cells = [percentile(list(timings.values()), q) for q in (50, 99)]
        cells += [percentile(added, 50), percentile(added, 99)]
        rate = len(timings) / wall
        cpu_cell = "" if target.pid is None else f"{per:.1f}"
        rows.append(
            f"| {target.label} | {concurrency} | {_cells(cells)} | {rate:.0f} | {cpu_cell} |"
        )
        print(rows[-1], flush=True)
    return rows


def large_rows(found: list[Target], template: bytes, trials: int) -> list[str]:
    """Each target's time for a cold large body, and its CPU for it."""
    rows: list[str] = []
    for i, target in enumerate(found):
        if target.missing:
            rows.append(f"| {target.label} | skipped: {target.missing} |")
            continue
        times: list[float] = []
        cpu = tree_cpu(target.pid)
        with httpx.Client(timeout=600) as client:
            for n in range(trials):
                times.append(_timed(client, target, _unique(template, 900_000 + 100 * i + n)))
        time.sleep(1.0)
        per = (tree_cpu(target.pid) - cpu) / trials
        cpu_cell = "" if target.pid is None else f"{per:.2f}"
        rows.append(f"| {target.label} | {statistics.median(times) / 1000:.2f} | {cpu_cell} |")
        print(rows[-1], flush=True)
    return rows


def behind_rows(found: list[Target], template: bytes, result: str, trials: int) -> list[str]:
    rows: list[str] = []
    for i, target in enumerate(found):
        if target.missing:
            rows.append(f"| {target.label} | skipped: {target.missing} |")
        elif target.pid is not None:
            rows.append(behind_two_large(target, template, result, trials, 1000 * (i + 1)))
            print(rows[-1], flush=True)
    return rows


def behind_two_large(target: Target, template: bytes, result: str, trials: int, base: int) -> str:
    """The small request alone, then 0.5 s after two large ones, ``trials`` times each."""
    alone: list[float] = []
    behind: list[float] = []
    with httpx.Client(timeout=600) as small:
        for n in range(3 + trials):  # three warm-up requests
            elapsed = _timed(small, target, small_body(result, base + n))
            if n >= 3:
                alone.append(elapsed)
        for n in range(trials):
            bigs = [_unique(template, 800_000 + base + 2 * n + k) for k in (0, 1)]
            workers = [threading.Thread(target=_large, args=(target, big)) for big in bigs]
            for worker in workers:
                worker.start()
            time.sleep(0.5)  # both large bodies are read and being rewritten by then
            behind.append(_timed(small, target, small_body(result, base + 500 + n)))
            for worker in workers:
                worker.join()
            time.sleep(1.0)  # counting the large ones after their answers takes CPU: let it end
    cells = [percentile(alone, 50), percentile(behind, 50), max(behind)]
    return f"| {target.label} | {_cells(cells)} |"


def _large(target: Target, content: bytes) -> None:
    with httpx.Client(timeout=600) as client:
        _timed(client, target, content)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--turns", type=int, default=10, help="requests per conversation")
    parser.add_argument("--large-mb", type=float, default=30.0)
    parser.add_argument("--trials", type=int, default=5, help="large bodies; smalls behind two")
    parser.add_argument("--no-litellm", action="store_true", help="skip the LiteLLM rows")
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
    with targets(litellm=not args.no_litellm) as found:
        loads = [row for c in args.concurrency for row in load_rows(found, convs, c)]
        larges = large_rows(found, template, args.trials)
        behinds = behind_rows(found, template, result, args.trials)
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
    notes = kept_notes(args.markdown)
    args.markdown.write_text(render(args, (loads, larges, behinds), facts) + notes)
    print(f"written to {args.markdown}")
    return 0


def kept_notes(path: Path) -> str:
    """What ``path`` holds after its generated part (which ends with the ``Machine:``
    paragraph), from the blank line before it; ``""`` when nothing."""
    if not path.exists():
        return ""
    text = path.read_text(encoding="utf-8")
    machine = text.find("\nMachine: ")
    end = text.find("\n\n", machine + 1) if machine >= 0 else -1
    return "" if end < 0 else text[end + 1 :]


def render(
    args: argparse.Namespace, rows: tuple[list[str], list[str], list[str]], facts: dict[str, Any]
) -> str:
    loads, larges, behinds = rows
    start, end = facts["load"]
    lines = [
        "# The proxy under load, side by side",
        "",
        f"Command: `{facts['command'].strip()}` (run on {time.strftime('%Y-%m-%d')})",
        "",
        f"Conversations: {facts['sessions']} Claude Code sessions of "
        "`shared/data/trajectories/openagents_claude_code`, cycled, each opened by a message of "
        f"its own (no two share the rewrite's memo), {args.turns} turns each spread over the "
        f"session (bodies p50 {facts['body_p50']:,} bytes, max {facts['body_max']:,}). C client "
        "threads send their conversations' turns back to back to each target in turn, all in "
        "front of the same fake upstream. Milliseconds per request from sending the body to the "
        "end of the reply; *added* is the target's time minus direct's for the same turn of the "
        "same conversation; req/s is requests per second of wall time; CPU is the serving "
        "process's own (with its children), in milliseconds per request.",
        "",
        "| target | concurrent conversations | p50 | p99 | added p50 | added p99 | req/s "
        "| CPU ms/request |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *loads,
        "",
        f"## A cold large body ({facts['large']:,} bytes)",
        "",
        f"Opened by a new message each time, so nothing of it is memoised; median of "
        f"{args.trials}.",
        "",
        "| target | seconds | CPU seconds/request |",
        "|---|---:|---:|",
        *larges,
        "",
        "## A small request behind two large ones",
        "",
        f"Small: a new conversation's second request ({facts['small']:,} bytes, a test log the "
        f"rewrite shortens). Each of {args.trials} trials sends two large bodies at once, waits "
        "0.5 s, and times the small one.",
        "",
        "| target | small alone p50 | small behind two large p50 | behind two large max |",
        "|---|---:|---:|---:|",
        *behinds,
        "",
        f"Machine: {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} "
        f"cores shared with other work (load average {start:.1f} at the start, {end:.1f} at the "
        "end: wall-clock figures carry that noise; compare rows of one run). The fake upstream, "
        "each gateway and the client run in their own processes on 127.0.0.1.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
