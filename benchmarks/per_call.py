"""Does per-call middleware work grow with the transcript? Milliseconds per call, early vs late.

Usage (from the repository root)::

    python -m benchmarks.per_call [--turns 1000] [--repeats 3] [--markdown FILE]

Builds one long run from real tool outputs (the coding runs in ``shared/data/trajectories``, or
the bundled samples without it): ``--turns`` assistant turns, each calling a tool whose recorded
output comes back, so the transcript ends with over ``2 * turns`` messages. Each tokenlean
middleware alone, the recommended stack, and ``llmslim`` (when installed, as in ``make bench``'s
environment) run it through a real ``create_agent`` with a scripted model, one fresh process per
run, with no checkpointer unless ``--checkpointer`` (LangGraph's ``InMemorySaver`` keeps every
version of the message list, so the process grows to gigabytes and every hook slows late in the
run, whatever it does). The time spent inside middleware hooks is read at every model call
(model and tool time excluded; the CPU time of the thread running the hook, so other work on a
shared machine does not count), and the table compares the mean over the first 100 calls with
the mean over the last 100: work proportional to what is new keeps that ratio near 1. A second
run per middleware starts with the tool outputs of the long run's last 100 calls, so that their
cost can be compared with what the same outputs cost at the start of a run. Figures are medians
over ``--repeats`` runs; the machine is shared, so only ratios from one run are quoted.
"""

from __future__ import annotations

import argparse
import gc
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
    from tokenlean.replay._bundled import bundled_paths
    from tokenlean.replay._formats import load_trajectory

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
        "fixed work (reference)": lambda: [_fixed_work()],
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


class _HookClock:
    """The thread's CPU time, and how much of it the garbage collector took inside hooks.

    ``timed`` reads the clock on entering and on leaving hook code (a ``wrap_*`` hook leaves it
    while its handler runs), so the readings alternate: in, out, in, out. A collection that
    runs between an "in" and the next "out" ran inside a hook. It is counted apart because it is
    not the hook's own work: the collector walks the young objects of the whole process, and
    the framework's state (the message list is copied at every step) grows with the transcript.
    """

    def __init__(self) -> None:
        self.inside = False
        self.collector = 0.0  # seconds of collections run inside hooks
        self._started: float | None = None
        gc.callbacks.append(self._on_collect)

    def __call__(self) -> float:
        self.inside = not self.inside
        return time.thread_time()  # CPU time: other load on the machine does not count

    def _on_collect(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time() if self.inside else None
        elif self._started is not None:
            self.collector += time.thread_time() - self._started
            self._started = None

    def close(self) -> None:
        gc.callbacks.remove(self._on_collect)


def _fixed_work() -> Any:
    """A middleware whose hook does the same work on every call, whatever the transcript."""
    from langchain.agents.middleware import AgentMiddleware

    class FixedWork(AgentMiddleware):
        """A hook doing the same work on every call, whatever the transcript: 300 dicts."""

        def before_model(self, state: Any, runtime: Any) -> None:
            rows: list[dict[str, Any]] = [{"n": i, "text": str(i)} for i in range(300)]
            sum(len(row["text"]) for row in rows)

    return FixedWork()


def _run(
    name: str, turns: int, offset: int = 0, checkpointer: bool = False
) -> list[tuple[float, float]]:
    """Middleware milliseconds spent between consecutive model calls of one run, and the part
    of them the garbage collector took. The run's tool outputs are the real ones from
    ``offset`` on; ``checkpointer`` gives the agent LangGraph's ``InMemorySaver``."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from tokenlean.replay._timing import Stopwatch, timed
    from tokenlean.testing import ScriptedChatModel

    outputs = _outputs()
    picked = [outputs[(offset + i) % len(outputs)] for i in range(turns)]
    clock = _HookClock()
    watch = Stopwatch(clock)
    marks: list[tuple[float, float]] = []

    def turn(i: int) -> Callable[[list[Any]], AIMessage]:
        def reply(messages: list[Any]) -> AIMessage:
            marks.append((watch.seconds, clock.collector))
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
        checkpointer=InMemorySaver() if checkpointer else None,
    )
    config: Any = {"configurable": {"thread_id": "t"}, "recursion_limit": 10 * turns + 100}
    agent.invoke({"messages": [HumanMessage("fix the failing tests", id="h0")]}, config)
    marks.append((watch.seconds, clock.collector))
    clock.close()
    return [(1000 * (b[0] - a[0]), 1000 * (b[1] - a[1])) for a, b in itertools.pairwise(marks)]


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


def _child(args: tuple[str, int, int, bool]) -> list[tuple[float, float]]:
    return _run(*args)


# first, last, all; first and last without the collector; the same-outputs run's first
Row = tuple[float, float, float, float, float, float]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", type=Path, default=HERE / "per_call.md")
    parser.add_argument(
        "--checkpointer",
        action="store_true",
        help="give the agent LangGraph's InMemorySaver (it keeps every version of the message "
        "list in memory, which slows all work late in a long run)",
    )
    args = parser.parse_args(argv)
    names = list(_stacks())
    rows: dict[str, list[Row]] = {n: [] for n in names}
    context = multiprocessing.get_context("spawn")
    start = time.perf_counter()
    for repeat in range(args.repeats):
        for name in names:
            with context.Pool(1) as pool:
                laps = pool.apply(_child, ((name, args.turns, 0, args.checkpointer),))
            # The same tool outputs as the last calls, at the start of a run of their own.
            with context.Pool(1) as pool:
                same = pool.apply(_child, ((name, WINDOW, args.turns - WINDOW, args.checkpointer),))
            rows[name].append(_summary(laps, same))
            shown = ", ".join(f"{x:.3f}" for x in rows[name][-1])
            print(f"[{repeat + 1}/{args.repeats}] {name}: {shown}", file=sys.stderr)
    elapsed = time.perf_counter() - start
    table = _table(rows)
    text = _report(table, args, elapsed)
    args.markdown.write_text(text)
    print(text)
    return 0


def _summary(laps: list[tuple[float, float]], same: list[tuple[float, float]]) -> Row:
    first, last = laps[:WINDOW], laps[-WINDOW:]
    return (
        statistics.fmean(t for t, _ in first),
        statistics.fmean(t for t, _ in last),
        statistics.fmean(t for t, _ in laps),
        statistics.fmean(t - c for t, c in first),
        statistics.fmean(t - c for t, c in last),
        statistics.fmean(t for t, _ in same[:WINDOW]),
    )


def _ratio(last: float, first: float) -> float:
    return last / first if first else float("nan")


def _table(rows: dict[str, list[Row]]) -> list[list[str]]:
    out = []
    for name, runs in rows.items():
        first = statistics.median(r[0] for r in runs)
        last = statistics.median(r[1] for r in runs)
        mean = statistics.median(r[2] for r in runs)
        ratio = statistics.median(_ratio(r[1], r[0]) for r in runs)
        matched = statistics.median(_ratio(r[1], r[5]) for r in runs)
        own = statistics.median(_ratio(r[4], r[3]) for r in runs)
        share = statistics.median(1 - r[4] / r[1] if r[1] else float("nan") for r in runs)
        out.append(
            [
                name,
                f"{first:.3f}",
                f"{last:.3f}",
                f"{ratio:.2f}",
                f"{matched:.2f}",
                f"{100 * share:.0f}%",
                f"{own:.2f}",
                f"{mean:.3f}",
            ]
        )
    return out


def _report(table: list[list[str]], args: argparse.Namespace, elapsed: float) -> str:
    head = [
        "middleware",
        f"ms/call, first {WINDOW}",
        f"ms/call, last {WINDOW}",
        "last / first",
        f"last / first {WINDOW}, same outputs",
        "collector, last",
        "last / first without collector",
        "ms/call, all",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in table]
    return (
        "# Middleware time per model call on a long run\n\n"
        f"One run of {args.turns} tool calls ({2 * args.turns + 2} messages at the end) built from "
        "real tool outputs, per middleware, in a fresh process; medians over "
        f"{args.repeats} repeats. Produced by `python -m benchmarks.per_call --turns {args.turns} "
        f"--repeats {args.repeats}{' --checkpointer' if args.checkpointer else ''}` on "
        f"{platform.machine()} with Python "
        f"{platform.python_version()} in {elapsed:.0f} s (a 2-core machine shared with other work: "
        "compare rows of one run only), "
        + (
            "with LangGraph's `InMemorySaver` as the agent's checkpointer"
            if args.checkpointer
            else "with no checkpointer: `InMemorySaver` keeps every version of the message list "
            "(the process ends near 1.8 GB), and that alone slows all work late in the run "
            "(`--checkpointer` shows it)"
        )
        + ".\n\n"
        "Times are the CPU time of the thread running the hooks. *collector, last* is the share "
        "of the last 100 calls' time that Python's garbage collector took while a hook ran: a "
        "collection walks the young objects of the whole process, and the framework copies the "
        "growing message list at every step, so a hook pays more per object it allocates late "
        "in a run. *fixed work* is a hook doing the same allocations on every call: how much "
        "that alone grows on this machine. The long run's tool outputs differ from call to "
        "call, so its first and last 100 calls do different work on what is new; *same "
        "outputs* divides the last 100 calls by the first 100 of a second, fresh run whose tool "
        "outputs are those of the last 100 calls: only the transcript before them differs.\n\n"
        + "\n".join(lines)
        + "\n"
    )


if __name__ == "__main__":
    sys.exit(main())
