"""Does per-call middleware work grow with the transcript? Milliseconds per call, early vs late.

Usage (from the repository root)::

    python -m benchmarks.per_call [--turns 1000] [--repeats 3] [--markdown FILE]

Builds one long run from real tool outputs (the coding runs in ``shared/data/trajectories``, or
the bundled samples without it): ``--turns`` assistant turns, each calling a tool whose recorded
output comes back, so the transcript ends with over ``2 * turns`` messages. Each tokenlean
middleware alone, the recommended stack, and ``llmslim`` (when installed, as in ``make bench``'s
environment) run it through a real ``create_agent`` with a scripted model, one fresh process per
run. The time spent inside middleware hooks is read at every model call (model and tool time
excluded; the CPU time of the thread running the hook, so other work on a shared machine does
not count), and the table compares the mean over the first 100 calls with the mean over the last
100: work proportional to what is new keeps that ratio near 1. Figures are medians over
``--repeats`` runs; the machine is shared, so only ratios from one run are quoted.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SHARED = HERE.parent.parent / "shared" / "data" / "trajectories"
WINDOW = 100


def _outputs() -> list[tuple[str, str, str]]:
    """(tool name, command, output) of real tool calls, coding runs first."""
    from tokenlean.replay.bundled import bundled_paths
    from tokenlean.replay.formats import load_trajectory

    paths = sorted(SHARED.glob("miniswe_deepseek/*.json")) or bundled_paths()
    found: list[tuple[str, str, str]] = []
    for path in paths:
        messages = load_trajectory(path).messages
        results = {m.tool_call_id: m.text for m in messages if m.role == "tool"}
        for message in messages:
            for call in message.tool_calls:
                if call.id in results:
                    found.append((call.name, json.dumps(call.args), results[call.id]))
    return found


def _stacks() -> dict[str, Callable[[], list[Any]]]:
    from tokenlean.langchain import (
        ContextEditorMiddleware,
        LoopGuardMiddleware,
        TokenBudgetMiddleware,
        TokenSavingMiddleware,
        ToolInputShorteningMiddleware,
        ToolOutputShorteningMiddleware,
        recommended_middleware,
    )

    stacks: dict[str, Callable[[], list[Any]]] = {
        "none": list,
        "ToolOutputShorteningMiddleware": lambda: [ToolOutputShorteningMiddleware()],
        "ToolInputShorteningMiddleware": lambda: [ToolInputShorteningMiddleware()],
        "ContextEditorMiddleware": lambda: [ContextEditorMiddleware()],
        "TokenSavingMiddleware": lambda: [TokenSavingMiddleware()],
        "LoopGuardMiddleware": lambda: [LoopGuardMiddleware()],
        "TokenBudgetMiddleware": lambda: [TokenBudgetMiddleware(token_budget=10**12)],
        "recommended_middleware()": recommended_middleware,
    }
    try:
        from llmslim.integrations.langchain_agents import LLMSlimToolOutputMiddleware
    except ImportError:
        return stacks
    stacks["llmslim (peer)"] = lambda: [LLMSlimToolOutputMiddleware()]
    return stacks


def _run(name: str, turns: int) -> list[float]:
    """Middleware milliseconds spent between consecutive model calls of one long run."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from tokenlean.replay.timing import Stopwatch, timed
    from tokenlean.testing import ScriptedChatModel

    outputs = _outputs()
    picked = [outputs[i % len(outputs)] for i in range(turns)]
    watch = Stopwatch(time.thread_time)  # CPU time: other load on the machine does not count
    marks: list[float] = []

    def turn(i: int) -> Callable[[list[Any]], AIMessage]:
        def reply(messages: list[Any]) -> AIMessage:
            marks.append(watch.seconds)
            if i == turns:
                return AIMessage("done", id="final")
            call = {"id": f"c{i}", "name": "bash", "args": {"command": picked[i][1]}}
            return AIMessage(f"step {i}", id=f"a{i}", tool_calls=[call])

        return reply

    results = {f"c{i}": out for i, (_, _, out) in enumerate(picked)}
    model = ScriptedChatModel(responses=[turn(i) for i in range(turns + 1)])
    agent: Any = create_agent(
        model,
        tools=[_recorded_tool(results)],
        middleware=[timed(m, watch) for m in _stacks()[name]()],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": 10 * turns + 100}
    agent.invoke({"messages": [HumanMessage("fix the failing tests", id="h0")]}, config)
    marks.append(watch.seconds)
    return [1000 * (b - a) for a, b in itertools.pairwise(marks)]


def _recorded_tool(results: dict[str, str]) -> Any:
    """A ``bash`` tool answering each call with its recorded output."""
    from typing import Annotated

    from langchain_core.messages import ToolMessage
    from langchain_core.tools import InjectedToolCallId, StructuredTool
    from pydantic import create_model

    schema = create_model(
        "bash_args",
        command=(str, ...),
        tool_call_id=(Annotated[str, InjectedToolCallId], ...),
    )

    def run(command: str, tool_call_id: str) -> Any:
        return ToolMessage(
            results.get(tool_call_id, ""),
            tool_call_id=tool_call_id,
            name="bash",
            id=f"t-{tool_call_id}",
        )

    return StructuredTool.from_function(
        func=run, name="bash", description="Run a shell command.", args_schema=schema
    )


def _child(args: tuple[str, int]) -> list[float]:
    return _run(*args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", type=Path, default=HERE / "per_call.md")
    args = parser.parse_args(argv)
    names = list(_stacks())
    rows: dict[str, list[tuple[float, float, float]]] = {n: [] for n in names}
    context = multiprocessing.get_context("spawn")
    start = time.perf_counter()
    for repeat in range(args.repeats):
        for name in names:
            with context.Pool(1) as pool:
                laps = pool.apply(_child, ((name, args.turns),))
            first, last = laps[:WINDOW], laps[-WINDOW:]
            rows[name].append(
                (statistics.fmean(first), statistics.fmean(last), statistics.fmean(laps))
            )
            print(f"[{repeat + 1}/{args.repeats}] {name}: {rows[name][-1]}", file=sys.stderr)
    elapsed = time.perf_counter() - start
    table = _table(rows, args.turns)
    text = _report(table, args, elapsed)
    args.markdown.write_text(text)
    print(text)
    return 0


def _table(rows: dict[str, list[tuple[float, float, float]]], turns: int) -> list[list[str]]:
    out = []
    for name, runs in rows.items():
        first = statistics.median(r[0] for r in runs)
        last = statistics.median(r[1] for r in runs)
        mean = statistics.median(r[2] for r in runs)
        ratio = statistics.median(r[1] / r[0] if r[0] else float("nan") for r in runs)
        out.append([name, f"{first:.3f}", f"{last:.3f}", f"{ratio:.2f}", f"{mean:.3f}"])
    return out


def _report(table: list[list[str]], args: argparse.Namespace, elapsed: float) -> str:
    head = [
        "middleware",
        f"ms/call, first {WINDOW}",
        f"ms/call, last {WINDOW}",
        "last / first",
        "ms/call, all",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in table]
    return (
        "# Middleware time per model call on a long run\n\n"
        f"One run of {args.turns} tool calls ({2 * args.turns + 2} messages at the end) built from "
        "real tool outputs, per middleware, in a fresh process; medians over "
        f"{args.repeats} repeats. Produced by `python -m benchmarks.per_call --turns {args.turns} "
        f"--repeats {args.repeats}` on {platform.machine()} with Python "
        f"{platform.python_version()} in {elapsed:.0f} s (a 2-core machine shared with other work: "
        "compare rows of one run only).\n\n" + "\n".join(lines) + "\n"
    )


if __name__ == "__main__":
    sys.exit(main())
