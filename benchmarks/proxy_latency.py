"""Latency the tokenlean proxy adds to a request, against the same request sent direct.

Usage (from the repository root)::

    python -m benchmarks.proxy_latency [--requests 300] [--history-tokens 200000]
        [--modes rewrite forward] [--pauses 0.2 0.0]

A fake Anthropic upstream (``tokenlean.testing.upstream``) and ``tokenlean proxy`` each run in their
own process on 127.0.0.1; this process sends every request twice over keep-alive connections,
direct and through the proxy, in alternating order, and reports p50 and p99 of each and of the
per-pair difference (the added latency). Each mode starts its own proxy: ``rewrite`` (the default
proxy, ``tokenlean.raw`` rewriting every body) and ``forward`` (``--no-rewrite``: forwarding and
statistics alone). Two cases, both Claude-Code-shaped bodies built from the
Claude Code trajectories in ``shared/data/trajectories`` (concatenated into one long session):

- ``cached history``: the same history of about ``--history-tokens`` tokens re-sent, as a client
  does between turns (the proxy has seen every message before);
- ``new long result``: that history plus a new tool result (a real test log from
  ``shared/data/tool_outputs``) made unique on each request, so nothing of it is memoised.

Writes ``benchmarks/proxy_latency.md`` (``--markdown`` to change the path).

``--cpu-windows N`` measures only the proxy's CPU per request on the re-sent history, in ``N``
windows of ``--requests`` back-to-back requests with no direct ones between them, and prints it;
with ``--api openai_responses`` (as Codex sends it), ``gemini`` (as gemini-cli sends it) or
``openai_chat``, the same history in that API's shape; with ``--tools``, the body also carries
real tool definitions (the 15 of a Codex Desktop rollout in ``shared/data/native/codex``, about
21 KB) in that API's shape, as every agent sends its tools on every request; with ``--alike N``,
N conversations that open alike (the history's first message, then each its own text in the
second: a team's agents with one system prompt) take turns, one request each.

``--behind-large`` measures one thing instead: a small request's latency through the proxy alone,
and while the proxy is rewriting a large body (about ``--large-mb`` MB: that history plus many
test logs, with a new first message on every request so nothing of it is memoised). It writes
one row, named by ``--label``, into its own section of the markdown, keeping the other rows, so
runs of two versions of the proxy sit side by side.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tokenlean.raw import Api, list_key
from tokenlean.raw.bodies import anthropic_requests, call_points
from tokenlean.raw.bodies import body as api_body
from tokenlean.replay._formats import load_trajectory
from tokenlean.tokens import TiktokenCounter
from tokenlean.transcript import Message

HERE = Path(__file__).parent
SHARED = Path(os.environ.get("TOKENLEAN_SHARED", HERE.parent.parent / "shared"))
TRAJECTORIES = SHARED / "data" / "trajectories" / "openagents_claude_code"
TOOL_OUTPUT = SHARED / "data" / "tool_outputs" / "test_logs"
CODEX_ROLLOUTS = SHARED / "data" / "native" / "codex"
HEADERS = {
    "content-type": "application/json",
    "anthropic-version": "2023-06-01",
    "x-api-key": "sk-ant-bench",
}
#: Where each API's requests go, and with which headers.
ROUTES: dict[str, tuple[str, dict[str, str]]] = {
    "anthropic": ("/v1/messages?beta=true", HEADERS),
    "openai_chat": (
        "/v1/chat/completions",
        {"content-type": "application/json", "authorization": "Bearer sk-bench"},
    ),
    "openai_responses": (
        "/v1/responses",
        {"content-type": "application/json", "authorization": "Bearer sk-bench"},
    ),
    "gemini": (
        "/v1beta/models/gemini-bench:generateContent",
        {"content-type": "application/json", "x-goog-api-key": "bench"},
    ),
}

UPSTREAM_SERVER = """
import sys, time
from tokenlean.testing.upstream import FakeUpstream
with FakeUpstream() as upstream:
    print(upstream.url, flush=True)
    sys.stdin.read()
"""


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def history_body(
    target_tokens: int, counter: TiktokenCounter, api: Api = "anthropic"
) -> tuple[dict[str, Any], int]:
    """The first request of the concatenated session (for ``api``) whose text reaches
    ``target_tokens``."""
    messages: list[Message] = []
    for path in sorted(TRAJECTORIES.glob("*.json")):
        messages.extend(load_trajectory(path).messages)
    body: dict[str, Any] = {}
    tokens = 0
    requests = (
        anthropic_requests(messages, model="claude-bench")
        if api == "anthropic"
        else (api_body(api, messages[:end], model="bench") for end in call_points(messages))
    )
    for body in requests:
        tokens = sum(counter.count(s) for s in _strings(body[list_key(api)]))
        if tokens >= target_tokens:
            break
    return body, tokens


def real_tools(api: Api) -> list[dict[str, Any]]:
    """The tool definitions of the first Codex rollout in ``shared/data/native`` that records
    them (its ``dynamic_tools``), in ``api``'s shape."""
    for path in sorted(CODEX_ROLLOUTS.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            payload = json.loads(line).get("payload")
            namespaces = payload.get("dynamic_tools") if isinstance(payload, dict) else None
            if namespaces:
                tools = [t for n in namespaces for t in n.get("tools", [])]
                return _shaped(api, tools)
    raise FileNotFoundError(f"no rollout with tool definitions in {CODEX_ROLLOUTS}")


def _shaped(api: Api, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    named = [(t["name"], t.get("description", ""), t.get("inputSchema", {})) for t in tools]
    if api == "anthropic":
        return [{"name": n, "description": d, "input_schema": s} for n, d, s in named]
    if api == "openai_chat":
        shaped = [{"name": n, "description": d, "parameters": s} for n, d, s in named]
        return [{"type": "function", "function": f} for f in shaped]
    if api == "gemini":
        declared = [{"name": n, "description": d, "parameters": s} for n, d, s in named]
        return [{"functionDeclarations": declared}]
    return [{"type": "function", "name": n, "description": d, "parameters": s} for n, d, s in named]


def long_result() -> str:
    """A real test log of 30-60 KB, the size a coding agent gets back from a test run."""
    fitting = [p for p in sorted(TOOL_OUTPUT.glob("*.txt")) if 30_000 <= p.stat().st_size <= 60_000]
    return fitting[0].read_text(encoding="utf-8", errors="replace")


def with_new_result(history: dict[str, Any], result: str, n: int) -> dict[str, Any]:
    call = {
        "type": "tool_use",
        "id": f"toolu_bench_{n}",
        "name": "Bash",
        "input": {"command": "python -m pytest -x"},
    }
    reply = {
        "type": "tool_result",
        "tool_use_id": call["id"],
        "content": f"run {n} at {time.time_ns()}\n{result}",
        "cache_control": {"type": "ephemeral"},
    }
    messages = [
        *history["messages"],
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [reply]},
    ]
    return {**history, "messages": messages}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def servers(no_rewrite: bool, extra: Sequence[str] = ()) -> Iterator[tuple[str, str, int]]:
    """(upstream URL, proxy URL, proxy pid), each served by its own process; ``extra``: more
    ``tokenlean proxy`` options."""
    upstream = subprocess.Popen(
        [sys.executable, "-c", UPSTREAM_SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    proxy = None
    # A folder of its own for the originals, gone with the run: the user's default folder would
    # fill with every run's, and the first sweep of what earlier runs left would be timed.
    originals = tempfile.TemporaryDirectory(prefix="tokenlean-bench-originals-")
    try:
        assert upstream.stdout is not None
        upstream_url = upstream.stdout.readline().strip()
        port = _free_port()
        command = [
            sys.executable,
            "-m",
            "tokenlean.cli",
            "proxy",
            "--port",
            str(port),
            "--upstream",
            upstream_url,
            "--quiet",
            "--originals",
            originals.name,
        ]
        # A token, so that GET /tokenlean/stats gives the proxy's whole account.
        token = secrets.token_urlsafe(32)
        proxy = subprocess.Popen(
            [*command, *(["--no-rewrite"] if no_rewrite else []), *extra],
            stderr=subprocess.DEVNULL,
            env={**os.environ, "TOKENLEAN_PROXY_TOKEN": token},
        )
        proxy_url = f"http://127.0.0.1:{port}/t/{token}"
        _wait_until_up(proxy_url)
        yield upstream_url, proxy_url, proxy.pid
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(30)
        upstream.kill()
        upstream.wait(30)
        originals.cleanup()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_until_up(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(url + "/tokenlean/stats", timeout=5)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError(f"the proxy at {url} did not start")


def _timed(client: httpx.Client, url: str, content: bytes, api: str = "anthropic") -> float:
    path, headers = ROUTES[api]
    start = time.perf_counter()
    reply = client.post(url + path, content=content, headers=headers)
    elapsed = time.perf_counter() - start
    reply.raise_for_status()
    return elapsed * 1000


def measure(
    bodies: Iterator[bytes], n: int, upstream: str, proxy: str, pause: float, warmup: int = 10
) -> dict[str, list[float]]:
    """Milliseconds per request, direct and proxied, for ``n`` pairs after ``warmup`` pairs,
    ``pause`` seconds apart."""
    direct: list[float] = []
    proxied: list[float] = []
    with httpx.Client(timeout=120) as a, httpx.Client(timeout=120) as b:
        for i in range(warmup + n):
            content = next(bodies)
            if i % 2:
                via, straight = _timed(b, proxy, content), _timed(a, upstream, content)
            else:
                straight, via = _timed(a, upstream, content), _timed(b, proxy, content)
            if i >= warmup:
                direct.append(straight)
                proxied.append(via)
            time.sleep(pause)
    added = [p - d for p, d in zip(proxied, direct, strict=True)]
    return {"direct": direct, "proxy": proxied, "added": added}


def percentile(values: list[float], q: float) -> float:
    return float(statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="measured pairs per case")
    parser.add_argument("--history-tokens", type=int, default=200_000)
    parser.add_argument(
        "--modes",
        nargs="+",
        choices=["rewrite", "forward"],
        default=["rewrite", "forward"],
        help="proxies to measure, one after the other (forward: --no-rewrite)",
    )
    parser.add_argument(
        "--pauses",
        type=float,
        nargs="+",
        default=[0.2, 0.0],
        help="seconds between pairs, one run each (an agent waits seconds for the model; "
        "0 is back to back)",
    )
    parser.add_argument("--markdown", type=Path, default=HERE / "proxy_latency.md")
    parser.add_argument(
        "--behind-large",
        action="store_true",
        help="measure only a small request alone and behind a large one (its own section)",
    )
    parser.add_argument("--trials", type=int, default=20, help="--behind-large: pairs measured")
    parser.add_argument("--large-mb", type=float, default=30.0, help="--behind-large: body size")
    parser.add_argument(
        "--delay",
        type=float,
        default=0.5,
        help="--behind-large: seconds between sending the large body and the small one",
    )
    parser.add_argument("--label", default="this tree", help="--behind-large: the row's name")
    parser.add_argument(
        "--cpu-windows",
        type=int,
        default=0,
        help="measure only the proxy's CPU per re-sent history, in this many windows of "
        "--requests back-to-back requests (no direct requests between them); prints, writes "
        "nothing",
    )
    parser.add_argument(
        "--api",
        choices=sorted(ROUTES),
        default="anthropic",
        help="--cpu-windows: the API whose requests carry the history",
    )
    parser.add_argument(
        "--tools",
        action="store_true",
        help="--cpu-windows: the body carries real tool definitions too",
    )
    parser.add_argument(
        "--alike",
        type=int,
        default=1,
        help="--cpu-windows: this many conversations that open alike, one request each in turn",
    )
    args = parser.parse_args()
    if not TRAJECTORIES.is_dir():
        print(f"needs {TRAJECTORIES}", file=sys.stderr)
        return 2
    if (args.api != "anthropic" or args.tools or args.alike != 1) and not args.cpu_windows:
        print("--api, --tools and --alike are for --cpu-windows", file=sys.stderr)
        return 2
    counter = TiktokenCounter("o200k_base", vocab_path=SHARED / "tokenizers")
    history, tokens = history_body(args.history_tokens, counter, args.api)
    if args.tools:
        history = {**history, "tools": real_tools(args.api)}
    if args.behind_large:
        return behind_large_main(args, history)
    if args.cpu_windows:
        return cpu_windows_main(args, history, tokens)
    cached = json.dumps(history).encode()
    result = long_result()
    if "rewrite" in args.modes and not importlib.util.find_spec("tokenlean.raw"):
        print("tokenlean.raw is not in this tree: measure --modes forward", file=sys.stderr)
        return 2
    rows: list[Row] = []
    accounts: dict[str, dict[str, Any]] = {}
    load_before = os.getloadavg()[0]
    for mode in args.modes:
        fresh = (json.dumps(with_new_result(history, result, n)).encode() for n in range(10**9))
        with servers(mode == "forward") as (upstream, proxy, pid):
            cases = [("cached history", iter(lambda: cached, None)), ("new long result", fresh)]
            for pause in args.pauses:
                for case, bodies in cases:
                    when = f"{pause * 1000:.0f} ms apart" if pause else "back to back"
                    name = f"{mode}: {case}, {when}"
                    cpu, before = cpu_seconds(pid), _account(proxy)
                    figures = measure(bodies, args.requests, upstream, proxy, pause)
                    after = _account(proxy)
                    figures["cpu"] = [1000 * (cpu_seconds(pid) - cpu) / (args.requests + 10)]
                    figures["rewrite"] = [_per_request(before, after, "rewrite_seconds")]
                    figures["count"] = [_per_request(before, after, "count_seconds")]
                    rows.append((name, figures))
                    print(name, {k: round(statistics.median(v), 2) for k, v in figures.items()})
            accounts[mode] = _account(proxy)
    load = (load_before, os.getloadavg()[0])
    facts = Facts(tokens, len(cached), len(result.encode()), load, time.strftime("%Y-%m-%d"))
    write_markdown(args, rows, facts, accounts)
    print(f"written to {args.markdown}")
    return 0


Row = tuple[str, dict[str, list[float]]]


@dataclass(frozen=True)
class Facts:
    tokens: int
    body_bytes: int
    result_bytes: int
    load: tuple[float, float]
    date: str


def _account(proxy: str) -> dict[str, Any]:
    """The proxy's running totals (``GET /tokenlean/stats``), once every answer is counted."""
    # Counting runs after each answer on the proxy's own thread; give it time to catch up.
    deadline = time.monotonic() + 30
    while True:
        total: dict[str, Any] = httpx.get(proxy + "/tokenlean/stats", timeout=30).json()["total"]
        if time.monotonic() > deadline:
            return total
        time.sleep(0.5)
        again: dict[str, Any] = httpx.get(proxy + "/tokenlean/stats", timeout=30).json()["total"]
        if again["requests"] == total["requests"]:
            return again


def _per_request(before: dict[str, Any], after: dict[str, Any], key: str) -> float:
    requests = max(int(after["requests"]) - int(before["requests"]), 1)
    return 1000 * float(after[key] - before[key]) / requests


def write_markdown(
    args: argparse.Namespace,
    rows: list[Row],
    facts: Facts,
    accounts: dict[str, dict[str, Any]],
) -> None:
    lines = [
        "# Latency the proxy adds",
        "",
        f"Command: `python -m benchmarks.proxy_latency --requests {args.requests} "
        f"--history-tokens {args.history_tokens} --modes {' '.join(args.modes)} "
        f"--pauses {' '.join(map(str, args.pauses))}` (run on {facts.date})",
        "",
        f"History: {facts.tokens:,} o200k tokens of message text ({facts.body_bytes:,} bytes of "
        "JSON), the Claude Code trajectories of `shared/data/trajectories/openagents_claude_code` "
        "concatenated into one session, re-sent whole on every request as a client does; new "
        f"long result: that history plus a real test log of {facts.result_bytes:,} bytes, unique "
        "on every request (nothing of it memoised). Modes: *rewrite* is the default proxy "
        "(`tokenlean.raw` rewriting every body), *forward* is `tokenlean proxy --no-rewrite` "
        f"(forwarding and statistics alone). {args.requests} measured pairs per case after 10 "
        "warm-up pairs; milliseconds per request from sending the body to the end of the reply "
        "(a short JSON answer).",
        "",
        "| mode: case | direct p50 | direct p95 | direct p99 | proxy p50 | proxy p95 | proxy p99 "
        "| added p50 | added p95 | added p99 | rewrite per request | proxy CPU per request |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, f in rows:
        cells = [percentile(f[k], q) for k in ("direct", "proxy", "added") for q in (50, 95, 99)]
        cells += [f["rewrite"][0], f["cpu"][0]]
        lines.append(f"| {name} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    lines.append("")
    for mode, stats in accounts.items():
        requests = max(stats["requests"], 1)
        rewrite_ms = 1000 * stats["rewrite_seconds"] / requests
        count_ms = 1000 * stats["count_seconds"] / requests
        lines += [
            f"The {mode} proxy's own account: {stats['requests']} requests, "
            f"{stats['rewritten']} rewritten, ~{stats['tokens_in']:,} tokens in and "
            f"~{stats['tokens_sent']:,} sent; {rewrite_ms:.2f} ms per request parsing and "
            f"rewriting on the request's path, {count_ms:.2f} ms per request counting tokens for "
            "the statistics after the answer.",
            "",
        ]
    lines += [
        "*Rewrite per request* is the proxy's own time parsing, rewriting and serialising the "
        "body on the request's path (`rewrite_seconds` of `GET /tokenlean/stats` over the case). "
        "Counting tokens for the statistics runs after the answer on its own thread; it competes "
        "for the CPU with a request that follows at once, which is what the back-to-back rows "
        "show. The rest of the added time is the second hop: reading the body, sending it "
        "upstream, passing the reply on.",
        "",
        f"Machine: {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores shared with other work (load average {facts.load[0]:.1f} at the "
        f"start, {facts.load[1]:.1f} at the end: wall-clock figures carry that noise, the CPU "
        "columns do not); the fake upstream, the proxy and the client each run in their own "
        "process on 127.0.0.1. Proxy CPU per request is the proxy process's user+system time "
        "over the case (warm-up included), divided by its requests.",
        "",
    ]
    kept = _section(args.markdown.read_text())[1] if args.markdown.exists() else ""
    args.markdown.write_text("\n".join(lines) + ("\n" + kept if kept else ""))


def cpu_windows_main(args: argparse.Namespace, history: dict[str, Any], tokens: int) -> int:
    """Proxy CPU per request on the re-sent history alone: nothing else shares the proxy's
    caches or the machine's cores with it between requests (30 warm-up requests first)."""
    contents = [json.dumps(_alike(history, args.api, k)).encode() for k in range(args.alike)]
    with servers(False) as (_, proxy, pid), httpx.Client(timeout=120) as client:
        for n in range(30):
            _timed(client, proxy, contents[n % args.alike], args.api)
        windows = []
        for _ in range(args.cpu_windows):
            time.sleep(0.5)  # the statistics of the window before are counted by now
            cpu = cpu_seconds(pid)
            for n in range(args.requests):
                _timed(client, proxy, contents[n % args.alike], args.api)
            windows.append(1000 * (cpu_seconds(pid) - cpu) / args.requests)
    figures = ", ".join(f"{w:.2f}" for w in windows)
    alike = f", {args.alike} conversations of one opening in turn" if args.alike > 1 else ""
    print(
        f"{args.api}{' with tools' if args.tools else ''}: {tokens:,} tokens of messages "
        f"({len(contents[0]):,} bytes) re-sent{alike}; "
        "proxy CPU ms per request, by window:"
    )
    print(f"{figures} (median {statistics.median(windows):.2f})")
    return 0


def _alike(history: dict[str, Any], api: Api, k: int) -> dict[str, Any]:
    """``history`` itself (``k`` 0), or a copy whose second message holds another text: a
    conversation that opens as it does and goes its own way."""
    if not k:
        return history
    body: dict[str, Any] = json.loads(json.dumps(history))
    second = body[list_key(api)][1]
    stack: list[Any] = [second]
    while stack:  # the first text of the message, made this conversation's
        value = stack.pop()
        if isinstance(value, dict):
            for key in ("text", "content"):
                if isinstance(value.get(key), str):
                    value[key] += f" (conversation {k})"
                    return body
            stack += reversed(list(value.values()))
        elif isinstance(value, list):
            stack += reversed(value)
    raise ValueError(f"no text in the second message of {api}'s history")


# -- a small request behind a large one --------------------------------------------------------

BEHIND_LARGE = "## A small request while a large one is rewritten"
NONCE = "0" * 24  # replaced in the bytes by a number of the same width: one request, one body


def large_template(history: dict[str, Any], result: str, megabytes: float) -> bytes:
    """``history`` plus test logs until the body reaches ``megabytes``, opened by a message
    holding :data:`NONCE` (a new one on every request, so the rewrite starts cold)."""
    opening = [
        {"role": "user", "content": f"large session {NONCE}"},
        {"role": "assistant", "content": "on it"},
    ]
    body = {**history, "messages": [*opening, *history["messages"]]}
    piece = len(json.dumps(with_new_result({"messages": []}, result, 0)))
    missing = megabytes * 1e6 - len(json.dumps(body))
    for n in range(max(0, int(missing / piece) + 1)):
        body = with_new_result(body, result, n)
    return json.dumps(body).encode()


def small_body(result: str, n: int) -> bytes:
    """A new conversation's second request: one command and its test log (rewritten: the log
    is shortened)."""
    body = {
        "model": "claude-bench",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": f"small session {n}: make the tests pass"}],
    }
    return json.dumps(with_new_result(body, result, n)).encode()


def _unique(template: bytes, n: int) -> bytes:
    return template.replace(NONCE.encode(), f"{n:0{len(NONCE)}d}".encode(), 1)


def _settle(proxy: str, requests: int) -> None:
    """Wait until the proxy has counted ``requests`` answers (counting a large body after its
    answer takes CPU, which the next measurement must not share)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        total = httpx.get(proxy + "/tokenlean/stats", timeout=60).json()["total"]
        if total["requests"] >= requests:
            return
        time.sleep(0.2)


def _send_into(client: httpx.Client, proxy: str, content: bytes, out: list[float]) -> None:
    out.append(_timed(client, proxy, content))


def behind_large(
    proxy: str, template: bytes, result: str, trials: int, delay: float
) -> dict[str, list[float]]:
    """Milliseconds: the small request alone; the small request sent ``delay`` seconds after a
    large one, while the proxy rewrites it; and the large one."""
    figures: dict[str, list[float]] = {"alone": [], "behind": [], "large": []}
    sent = 0
    with httpx.Client(timeout=300) as small, httpx.Client(timeout=300) as large:
        for n in range(3 + trials):  # three warm-up requests
            elapsed = _timed(small, proxy, small_body(result, n))
            if n >= 3:
                figures["alone"].append(elapsed)
        sent += 3 + trials
        for n in range(trials):
            _settle(proxy, sent)
            done: list[float] = []
            big = _unique(template, n)
            worker = threading.Thread(target=_send_into, args=(large, proxy, big, done))
            worker.start()
            time.sleep(delay)
            figures["behind"].append(_timed(small, proxy, small_body(result, 1000 + n)))
            worker.join()
            figures["large"].append(done[0])
            sent += 2
    _settle(proxy, sent)
    return figures


def behind_large_main(args: argparse.Namespace, history: dict[str, Any]) -> int:
    result = long_result()
    template = large_template(history, result, args.large_mb)
    with servers(no_rewrite=False) as (_, proxy, _pid):
        figures = behind_large(proxy, template, result, args.trials, args.delay)
    print({k: round(statistics.median(v), 2) for k, v in figures.items()})
    q = [(k, p) for k in ("alone", "behind") for p in (50, 95)]
    cells = [f"{percentile(figures[k], p):.1f}" for k, p in q]
    cells += [f"{max(figures['behind']):.1f}", f"{percentile(figures['large'], 50):.0f}"]
    cells.append(f"{os.getloadavg()[0]:.1f}")
    row = f"| {args.label} | " + " | ".join(cells) + " |"
    facts = (len(template), len(small_body(result, 0)))
    write_behind_large(args, row, facts)
    print(f"written to {args.markdown}")
    return 0


def _section(text: str) -> tuple[str, str]:
    """(what comes before the behind-large section, the section itself)."""
    at = text.find(BEHIND_LARGE)
    return (text, "") if at < 0 else (text[:at], text[at:])


def write_behind_large(args: argparse.Namespace, row: str, facts: tuple[int, int]) -> None:
    """The section with ``row`` in place of an earlier row of the same label (else last)."""
    existing = args.markdown.read_text() if args.markdown.exists() else ""
    before, section = _section(existing)
    label = row.split("|")[1]
    rows = [
        row if line.split("|")[1] == label else line
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith("| proxy ")
    ]
    large, small = facts
    lines = [
        BEHIND_LARGE,
        "",
        f"Command: `python -m benchmarks.proxy_latency --behind-large --trials {args.trials} "
        f'--large-mb {args.large_mb:g} --delay {args.delay:g} --label "<row>"` '
        f"(last run on {time.strftime('%Y-%m-%d')})",
        "",
        f"Small: a new conversation's second request ({small:,} bytes: one command and a real "
        f"test log, which the rewrite shortens). Large: {large:,} bytes, the history above plus "
        "test logs, opened by a new message on every request so the rewrite starts cold. Each "
        f"trial sends the large body, waits {args.delay:g} s (it is read and being rewritten by "
        "then), and times the small one; the next trial starts once the proxy has counted both. "
        f"{args.trials} trials, after {args.trials} small requests alone (3 warm-up requests "
        "first). Milliseconds from sending a body to the end of its reply; *load* is the "
        "machine's load average at the end of the run (2 cores shared with other work). Each "
        "row is one run of the command on the tree its label names.",
        "",
        "Behind a large rewrite, a small request still takes longer than alone: the rewrite "
        "threads share one interpreter, so the small one's parse and rewrite get the GIL in "
        "turns with the large one's (and the event loop with both).",
        "",
        "| proxy | small alone p50 | small alone p95 | small behind large p50 "
        "| small behind large p95 | small behind large max | large p50 | load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        *([] if row in rows else [row]),
        "",
    ]
    args.markdown.write_text(before.rstrip("\n") + "\n\n" + "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
