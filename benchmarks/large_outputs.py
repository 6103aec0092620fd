"""Large tool outputs through a real ``create_agent``: wall time and peak memory per middleware.

Run from the repository root::

    python -m benchmarks.large_outputs [--repeat 3] [--case 50mb-log] [--middleware none] ...
    python -m benchmarks.large_outputs --baseline-src /path/to/older/checkout/src   # before/after

Every (case, middleware) pair runs in a fresh subprocess: a ``ScriptedChatModel`` agent (with an
``InMemorySaver`` checkpointer, as deployed agents have) calls one tool that returns the big
output, then three small tools (so the big result ages past the token-saving window and is
re-sent on four model calls), then answers. Reported per pair: the
median wall and CPU time of ``agent.invoke`` over ``--repeat`` runs (CPU time is the figure to
read on a machine shared with other work), the peak resident memory growth
during it (``VmHWM`` reset through ``/proc/self/clear_refs`` just before the run; without it,
``ru_maxrss``), how many characters the model was sent on its last call, and how many warnings
or errors tokenlean logged (a middleware that fails is fast, so that column must be 0).

Cases: ``50mb-log`` (the real test logs in ``../shared/data/tool_outputs`` repeated to 50 MB;
a synthetic pytest log when they are absent), ``10mb-line`` (the same text on one 10 MB line),
``1m-lines`` (a million short lines), ``200k-spaces`` (a short log with a line of 200,000
spaces not followed by a newline, the input that used to hang the token estimate),
``50mb-clean`` (a 50 MB log without an error line: the shortener's search for errors reads all
of it) and ``50mb-json`` (a JSON array of 700,000 records, two failed).

It also reports the throughput of ``tokenlean.shorten.shorten`` (defaults, median of
``--repeat``) on each case, in MB of UTF-8 input per CPU second.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOKENLEAN_SHARED", ROOT.parent / "shared"))
TEST_LOGS = SHARED / "data" / "tool_outputs" / "test_logs"
MB = 1_000_000
# Exact counts where the vocabulary is local, as in the tests and the Makefile.
os.environ.setdefault("TOKENLEAN_TIKTOKEN_DIR", str(SHARED / "tokenizers"))

CASES = ("50mb-log", "10mb-line", "1m-lines", "200k-spaces", "50mb-clean", "50mb-json")
MIDDLEWARE = (
    "none",
    "output-shortening",
    "input-shortening",
    "context-editor",
    "token-saving",
    "loop-guard",
    "budget",
    "recommended",
)


# -- inputs ------------------------------------------------------------------------------------


def real_log() -> str | None:
    """The real SWE-bench test logs, concatenated (None without ``../shared``)."""
    files = sorted(TEST_LOGS.glob("*.txt")) if TEST_LOGS.is_dir() else []
    if not files:
        return None
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files)


def synthetic_log() -> str:
    """A deterministic pytest-style log with passes, a failure and its traceback."""
    lines = [
        f"tests/test_mod_{i % 40}.py::test_case_{i} PASSED [{i % 100:3d}%]" for i in range(400)
    ]
    lines[200:200] = [
        "Traceback (most recent call last):",
        '  File "/repo/pkg/core.py", line 88, in run',
        "    result = compute(value)",
        "ValueError: value must be positive, got -3",
        "FAILED tests/test_mod_7.py::test_case_207 - ValueError",
    ]
    lines.append("===== 1 failed, 399 passed in 12.34s =====")
    return "\n".join(lines)


def log_text() -> str:
    return real_log() or synthetic_log()


def clean_log(size: int) -> str:
    """A log without one error line: the shortener's search for errors reads all of it."""
    rows = (
        f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d} INFO worker {i % 8} ok item {i}"
        for i in range(size // 40)
    )
    return "\n".join(rows)[:size]


def json_records(size: int) -> str:
    """A JSON array of API records of about ``size`` characters, two of them failed."""
    record = '{"id": %d, "name": "item %d", "status": "%s", "tags": ["a", "b"], "score": %d}'
    count = size // len(record % (500_000, 500_000, "ok", 50))
    rows = [
        record % (i, i, "failed" if i in (7, count - 7) else "ok", i % 100) for i in range(count)
    ]
    return "[" + ", ".join(rows) + "]"


def repeat_to(text: str, size: int) -> str:
    """``text`` repeated (joined by newlines) and cut to ``size`` characters."""
    unit = text + "\n"
    return (unit * (size // len(unit) + 1))[:size]


def make_case(case: str) -> str:
    if case == "50mb-log":
        return repeat_to(log_text(), 50 * MB)
    if case == "10mb-line":
        return repeat_to(" ".join(log_text().split("\n")), 10 * MB).replace("\n", " ")
    if case == "1m-lines":
        return "\n".join(f"file_{i:07d}.txt" for i in range(1_000_000))
    if case == "200k-spaces":
        return log_text()[:20_000] + "\nprogress:" + " " * 200_000 + "done"
    if case == "50mb-clean":
        return clean_log(50 * MB)
    if case == "50mb-json":
        return json_records(50 * MB)
    raise ValueError(f"case must be one of {CASES}, got {case!r}")


# -- the agent -----------------------------------------------------------------------------------


def make_middleware(name: str) -> list[Any]:
    from tokenlean.langchain import (
        ContextEditorMiddleware,
        LoopGuardMiddleware,
        TokenBudgetMiddleware,
        TokenSavingMiddleware,
        ToolInputShorteningMiddleware,
        ToolOutputShorteningMiddleware,
        recommended_middleware,
    )

    factories: dict[str, Callable[[], list[Any]]] = {
        "none": list,
        "output-shortening": lambda: [ToolOutputShorteningMiddleware()],
        "input-shortening": lambda: [ToolInputShorteningMiddleware()],
        "context-editor": lambda: [ContextEditorMiddleware()],
        "token-saving": lambda: [TokenSavingMiddleware()],
        "loop-guard": lambda: [LoopGuardMiddleware()],
        "budget": lambda: [TokenBudgetMiddleware(token_budget=100_000)],
        "recommended": lambda: recommended_middleware(),
    }
    if name not in factories:
        raise ValueError(f"middleware must be one of {MIDDLEWARE}, got {name!r}")
    return factories[name]()


def make_agent(text: str, middleware: list[Any]) -> tuple[Any, Any]:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from tokenlean.testing import ScriptedChatModel

    @tool
    def big_output(command: str) -> str:
        """Run a command and return everything it printed."""
        return text

    @tool
    def small_output(command: str) -> str:
        """Run a command that prints little."""
        return f"ran {command}: ok"

    def call(name: str, command: str, n: int) -> AIMessage:
        args = {"command": command}
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{n}"}])

    responses = [
        call("big_output", "pytest -x tests", 1),
        call("small_output", "git status", 2),
        call("small_output", "ls src", 3),
        call("small_output", "cat setup.cfg", 4),
        AIMessage(content="Done: one test fails with a ValueError."),
    ]
    model = ScriptedChatModel(responses=responses)
    # A checkpointer, as a real deployment has: the baseline then pays for keeping the state.
    agent = create_agent(
        model, tools=[big_output, small_output], middleware=middleware, checkpointer=InMemorySaver()
    )
    return agent, model


# -- measuring (in the child process) ------------------------------------------------------------


def _status_kb(field: str) -> int | None:
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    match = re.search(rf"^{field}:\s+(\d+) kB", status, re.M)
    return int(match.group(1)) if match else None


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class _Problems(logging.Handler):
    """Counts tokenlean's warnings and errors (each one means a middleware gave up)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def measure(run: Callable[[], Any]) -> tuple[dict[str, float], Any]:
    """Wall and CPU seconds and peak memory growth (MB) of ``run()``, and its result."""
    gc.collect()
    exact = _reset_peak()
    before = _status_kb("VmRSS") if exact else None
    before_max = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start, cpu = time.perf_counter(), time.process_time()
    result = run()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    if exact and before is not None:
        growth_kb = (_status_kb("VmHWM") or 0) - before
    else:  # without clear_refs: growth of the process's peak, a lower bound
        growth_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before_max
    return {"seconds": seconds, "cpu": cpu, "growth_mb": max(0, growth_kb) / 1024}, result


def child_agent(case: str, middleware: str) -> dict[str, Any]:
    text = make_case(case)
    agent, model = make_agent(text, make_middleware(middleware))
    problems = _Problems()
    logging.getLogger("tokenlean").addHandler(problems)
    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": 50}
    request = {"messages": [{"role": "user", "content": "Run the tests and tell me what fails."}]}
    figures, _ = measure(lambda: agent.invoke(request, config))
    last = model.calls[-1].messages
    return {
        **figures,
        "model_calls": len(model.calls),
        "sent_chars": sum(len(str(m.content)) for m in last),
        "problems": problems.count,
    }


def child_shorten(case: str) -> dict[str, Any]:
    from tokenlean import shorten

    text = make_case(case)
    figures, report = measure(lambda: shorten(text))
    return {
        **figures,
        "mb": len(text.encode("utf-8")) / MB,
        "chars_after": len(report.text),
    }


# -- the parent ----------------------------------------------------------------------------------


def run_child(args: list[str], timeout: float, src: Path | None = None) -> dict[str, Any] | None:
    """One fresh interpreter (importing tokenlean from ``src`` when given); ``None`` when it
    timed out or failed."""
    command = [sys.executable, "-m", "benchmarks.large_outputs", "--child", *args]
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-2000:])
        return None
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def median_of(runs: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    if any(r is None for r in runs) or not runs:
        return None
    done = [r for r in runs if r is not None]
    out = dict(done[0])
    for key in ("seconds", "cpu", "growth_mb"):
        out[key] = statistics.median(r[key] for r in done)
    out["problems"] = max(r.get("problems", 0) for r in done)
    return out


Result = dict[str, Any] | None
Sources = dict[str, Path | None]


def measure_all(
    child: list[str], sources: Sources, repeat: int, timeout: float
) -> dict[str, Result]:
    """The median result of ``child`` per source; the sources take turns, run after run, so a
    change in the machine's load hits them alike. A source that times out is not run again."""
    runs: dict[str, list[Result]] = {label: [] for label in sources}
    for _ in range(repeat):
        for label, src in sources.items():
            if not runs[label] or runs[label][-1] is not None:
                runs[label].append(run_child(child, timeout, src))
    return {label: median_of(done) for label, done in runs.items()}


def _cell(result: Result, timeout: float) -> str:
    if result is None:
        return f"> {timeout:.0f} s (timeout or failure)"
    return f"{result['seconds']:.2f} s ({result['cpu']:.2f} cpu), {result['growth_mb']:.0f} MB"


def _extra(mine: Result, base: Result) -> str:
    if mine is None or base is None:
        return "n/a"
    return f"{mine['cpu'] - base['cpu']:+.2f} s, {mine['growth_mb'] - base['growth_mb']:+.0f} MB"


def print_agent_tables(
    results: dict[tuple[str, str], dict[str, Result]], label: str, cases: list[str],
    names: list[str], timeout: float,
) -> None:  # fmt: skip
    head = "| middleware | " + " | ".join(cases) + " |\n|---|" + "---|" * len(cases)
    title = f" ({label})" if label else ""
    print(f"\nWall time (CPU time) of `agent.invoke` and peak memory growth{title}:\n")
    print(head)
    for name in names:
        cells = [_cell(results[case, name][label], timeout) for case in cases]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(f"\nAgainst no middleware: extra CPU seconds, extra MB{title}; then the characters the")
    print("model was sent on its last call and the warnings tokenlean logged:\n")
    print(head)
    for name in names:
        cells = []
        for case in cases:
            mine = results[case, name][label]
            extra = _extra(mine, results[case, "none"][label])
            if mine is not None:
                extra += f"; {mine['sent_chars']:,} chars, {mine['problems']} warnings"
            cells.append(extra)
        print(f"| {name} | " + " | ".join(cells) + " |")


def print_comparison(
    results: dict[tuple[str, str], dict[str, Result]], cases: list[str], names: list[str]
) -> None:
    print("\nExtra CPU seconds and MB against no middleware, before -> after:\n")
    print("| middleware | " + " | ".join(cases) + " |\n|---|" + "---|" * len(cases))
    for name in names[1:]:
        cells = []
        for case in cases:
            row, base = results[case, name], results[case, "none"]
            cells.append(
                f"{_extra(row['before'], base['before'])} -> {_extra(row['after'], base['after'])}"
            )
        print(f"| {name} | " + " | ".join(cells) + " |")


def print_shorten_table(cases: list[str], sources: Sources, repeat: int, timeout: float) -> None:
    print("\n`tokenlean.shorten.shorten` at its defaults (MB of UTF-8 input per CPU second):\n")
    print("| case | source | MB | seconds | cpu seconds | MB/s (cpu) | peak growth | chars after |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for case in cases:
        for label, result in measure_all(["shorten", case], sources, repeat, timeout).items():
            if result is None:
                print(f"| {case} | {label} | | > {timeout:.0f} s | | | | |")
                continue
            rate = result["mb"] / max(result["cpu"], 1e-9)
            print(
                f"| {case} | {label} | {result['mb']:.1f} | {result['seconds']:.2f} "
                f"| {result['cpu']:.2f} | {rate:.1f} | {result['growth_mb']:.0f} MB "
                f"| {result['chars_after']:,} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per subprocess")
    parser.add_argument("--case", action="append", choices=CASES)
    parser.add_argument("--middleware", action="append", choices=MIDDLEWARE)
    parser.add_argument("--no-shorten", action="store_true", help="skip the throughput table")
    parser.add_argument(
        "--baseline-src",
        type=Path,
        help="another checkout's src/ to measure in turns with this one (before -> after)",
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, case, *rest = args.child
        result = child_agent(case, rest[0]) if kind == "agent" else child_shorten(case)
        print(json.dumps(result))
        return
    cases = args.case or list(CASES)
    names = ["none", *[n for n in args.middleware or MIDDLEWARE if n != "none"]]
    sources: Sources = {"": None}
    if args.baseline_src is not None:
        sources = {"before": args.baseline_src.resolve(), "after": ROOT / "src"}
    source = "real test logs" if real_log() is not None else "synthetic log (no ../shared)"
    print(f"input: {source}; python {sys.version.split()[0]}; {os.cpu_count()} cpus")
    print(f"TOKENLEAN_TIKTOKEN_DIR={os.environ.get('TOKENLEAN_TIKTOKEN_DIR', '(unset)')}")
    results: dict[tuple[str, str], dict[str, Result]] = {}
    for case in cases:
        for name in names:
            results[case, name] = measure_all(
                ["agent", case, name], sources, args.repeat, args.timeout
            )
            for label, result in results[case, name].items():
                sys.stderr.write(f"{case} {name} {label}: {_cell(result, args.timeout)}\n")
    for label in sources:
        print_agent_tables(results, label, cases, names, args.timeout)
    if args.baseline_src is not None:
        print_comparison(results, cases, names)
    if not args.no_shorten:
        print_shorten_table(cases, sources, args.repeat, args.timeout)


if __name__ == "__main__":
    main()
