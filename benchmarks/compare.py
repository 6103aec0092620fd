"""Compare tokenlean with the libraries people would otherwise use, in one replay run.

Usage (from the repository root; ``make bench`` sets up a virtual environment with the peers)::

    python -m benchmarks.compare [TRAJECTORY_DIR] [-j JOBS]

Replays every trajectory through: no middleware; tokenlean's recommended stacks and each tokenlean
middleware alone; and, when installed, ``reasonblocks==0.2.5`` ``TokenSavingMiddleware``,
``llmslim==0.11.2`` ``LLMSlimToolOutputMiddleware``, LangChain's ``ContextEditingMiddleware``
(defaults and a 30k trigger) and ``headroom-ai`` (offline). Writes ``benchmarks/results.md``
(the pooled table, a table per source — the trajectory's folder — with each strategy's worst
source, and how it was produced), ``benchmarks/results.svg`` (billed input against reference
recall, pooled) and ``benchmarks/results.json`` (pooled, per-source and per-run rows).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

from tokenlean.replay import _report as report
from tokenlean.replay import _strategies as strategies
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._runner import ReplayReport, run_replay, stderr_progress

HERE = Path(__file__).parent
PLUGINS = [
    "benchmarks.peers_reasonblocks",
    "benchmarks.peers_llmslim",
    "benchmarks.peers_langchain",
    "benchmarks.peers_headroom",
]
TOKENLEAN = [
    "recommended-anthropic",
    "recommended-openai",
    "shorten",
    "shorten-conservative",
    "shorten-inputs",
    "token-saving",
    "token-saving-once",
    "context-editor",
    "context-editor-plain",
    "loop-guard",
    "budget-100k",
]
PEERS = [
    "reasonblocks",
    "llmslim",
    "langchain-context-editing",
    "langchain-context-editing-30k",
    "headroom",
]


def available(names: list[str]) -> tuple[list[str], list[str]]:
    """Split names into (registered and installed, missing)."""
    known = {s.name: s for s in strategies.all_strategies()}
    ok = [n for n in names if n in known and known[n].available()]
    return ok, [n for n in names if n not in ok]


def best_at_full_recall(result: ReplayReport, floor: float = 0.97) -> str | None:
    """The entry with the lowest billed input (Anthropic-style) among those with recall >= floor."""
    eligible = [
        (row.billed_anthropic, name)
        for name, row in result.pooled.items()
        if row.recall >= floor and name != strategies.BASELINE and row.calls
    ]
    return min(eligible)[1] if eligible else None


def best_on_every_source(
    result: ReplayReport, floor: float = 0.97, min_refs: int = report.MIN_REFS
) -> str | None:
    """The lowest pooled billed input among entries with recall >= floor on every source that
    has at least ``min_refs`` references (the default is judged by its worst source)."""
    worst = report.worst_sources(result, min_refs=min_refs)
    eligible = [
        (row.billed_anthropic, name)
        for name, row in result.pooled.items()
        if name != strategies.BASELINE
        and row.calls
        and name in worst
        and (worst[name].recall is None or worst[name].recall >= floor)
    ]
    return min(eligible)[1] if eligible else None


def markdown(result: ReplayReport, command: str, missing: list[str], seconds: float) -> str:
    best = best_at_full_recall(result)
    best_worst = best_on_every_source(result)
    lines = [
        "# Benchmark: tokenlean against other libraries",
        "",
        f"Produced by `{command}` on {platform.platform()} with Python {platform.python_version()}"
        f", {len({r.trajectory for r in result.runs})} trajectories, in {seconds:.0f} s.",
        f"Tokens counted with: {result.counter}. Ratios are against no middleware in the same run.",
        "",
        report.markdown_table(result),
        "",
        f"Lowest billed input (Anthropic-style) with reference recall >= 0.97: **{best}**.",
        f"Lowest with recall >= 0.97 on every source with >= {report.MIN_REFS} references:"
        f" **{best_worst}**.",
        "",
        "![billed input against reference recall](results.svg)",
        "",
        "## Per source",
        "",
        "Each source is a folder of trajectories; ratios are against no middleware on the same"
        " source in the same run. Each cell: billed input (Anthropic-style) / reference recall.",
        "",
        report.source_matrix(result),
        "",
        "In full (`refs` counts the references recall is measured on):",
        "",
        report.by_source_section(result, markdown=True),
    ]
    if missing:
        lines += ["", f"Not run (not installed or not registered): {', '.join(missing)}."]
    failures = result.errors()
    if failures:
        lines += ["", f"{len(failures)} runs failed; see results.json."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    default_dir = HERE.parent.parent / "shared" / "data" / "trajectories"
    parser.add_argument("trajectories", nargs="?", type=Path, default=default_dir)
    parser.add_argument("-j", "--jobs", type=int, default=None)
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    strategies.load_plugins(PLUGINS)
    names, missing = available([strategies.BASELINE, *TOKENLEAN, *PEERS])
    paths = sorted(args.trajectories.rglob("*.json"))
    trajectories = [load_trajectory(p) for p in paths if p.name != "index.json"]
    start = time.perf_counter()
    result = run_replay(
        trajectories, names, jobs=args.jobs, plugins=PLUGINS, progress=stderr_progress
    )
    seconds = time.perf_counter() - start
    command = "python -m benchmarks.compare " + " ".join(sys.argv[1:] if argv is None else argv)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.md").write_text(markdown(result, command.strip(), missing, seconds))
    report.write_chart(result, args.out / "results.svg")
    report.write_json(result, args.out / "results.json")
    print(report.markdown_table(result))
    print("\n" + report.by_source_section(result, markdown=True))
    print(f"\nbest at recall >= 0.97: {best_at_full_recall(result)}; missing: {missing or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
