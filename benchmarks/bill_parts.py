"""Where the bill goes: each part of the prompt's share of the billed input, per source.

Usage (from the repository root)::

    TOKENLEAN_TIKTOKEN_DIR=../shared/tokenizers \\
        python -m benchmarks.bill_parts [TRAJECTORY_DIR] [-j JOBS] [--limit N]

Each trajectory is replayed through a real ``create_agent`` with no middleware, with the
first-sight oracle of :mod:`benchmarks.room`, and with ``recommended_middleware("anthropic")``,
each call's prompt sent through the same Anthropic Messages body round trip as the room. The
Anthropic-style bill of every call is then split over the prompt's blocks: a block inside the
prefix the previous call shared is billed at the cached price (0.1), the rest at the cache-write
price (1.25), so the parts of a row add up to its billed input. A part is what the block holds:
the tool schemas, the system prompt, the user's messages, the agent's own turns (its text and
tool-call arguments), or the results of one tool. Every figure is a share of what no middleware
bills on the same source, in this run. Writes ``benchmarks/bill_parts.md``.

It says how much of a source's remaining bill any output shortening could still reach (the tool
results), and which tools hold it.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from benchmarks import _common as common
from benchmarks._common import measurer
from benchmarks.room import oracle_trajectory
from tokenlean.cost import ANTHROPIC
from tokenlean.replay import FIXED, part_of, split_billed
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._metrics import _common_prefix as common_prefix
from tokenlean.tokens import default_counter

HERE = Path(__file__).parent
ROWS = ("none", "oracle", "recommended")
#: Parts that are not tool output (tokenlean.replay's); every other part is ``results of `name```.
SCHEMAS, SYSTEM, USER, OWN = FIXED
#: Tools shown by name in a source's table (the dearest under no middleware); the rest are summed.
TOP_TOOLS = 6

#: ``{part: billed}``, and ``{row: {part: billed}}`` for one run or a source's runs.
Bill = defaultdict[str, float]
Parts = dict[str, Bill]


def billed_parts(
    prompts: Sequence[tuple[Sequence[str], Sequence[int], Sequence[str]]],
) -> Bill:
    """Each part's Anthropic-style bill over calls given as ``(blocks, tokens, parts)``: the
    blocks the previous call's prompt began with are read from the cache."""
    out: Bill = defaultdict(float)
    previous: Sequence[str] = ()
    for blocks, tokens, parts in prompts:
        cached = sum(tokens[: common_prefix(previous, blocks)])
        for part, billed in zip(parts, split_billed(ANTHROPIC, tokens, cached), strict=True):
            out[part] += billed
        previous = blocks
    return out


def measure_one(path: str) -> tuple[str, Parts]:
    """The source of one trajectory and its parts' bills under each row."""
    from tokenlean.langchain import recommended_middleware
    from tokenlean.replay._engine import replay
    from tokenlean.replay._raw import call_prompts, round_trip
    from tokenlean.tokens import tool_schema_text

    trajectory = load_trajectory(path)
    names = {c.id: c.name for m in trajectory.messages for c in m.tool_calls if c.id}
    rows = {
        "none": (trajectory, []),
        "oracle": (oracle_trajectory(trajectory), []),
        "recommended": (trajectory, recommended_middleware("anthropic")),
    }
    out: Parts = {}
    for row, (edited, middleware) in rows.items():
        prompts = []
        for call in call_prompts(trajectory, replay(edited, middleware)):
            if call.turn is None:  # a call the recording does not answer is not measured
                continue
            messages = round_trip("anthropic", call.messages)
            prompt = measurer().measure(tool_schema_text(call.tools), messages)
            parts = [SCHEMAS, *(part_of(m, names) for m in messages)]
            prompts.append((prompt.blocks, prompt.tokens, parts))
        out[row] = billed_parts(prompts)
    return trajectory.source_name, out


def pooled(results: Iterable[tuple[str, Parts]]) -> dict[str, Parts]:
    """Parts summed by source (then ``(all)``)."""
    out: dict[str, Parts] = defaultdict(lambda: {row: defaultdict(float) for row in ROWS})
    for source, parts in results:
        for group in (source, "(all)"):
            for row in ROWS:
                for part, billed in parts[row].items():
                    out[group][row][part] += billed
    return {s: out[s] for s in sorted(out, key=lambda s: (s == "(all)", s))}


def _tools(parts: Bill) -> float:
    return sum(v for k, v in parts.items() if k not in FIXED)


def summary(table: Mapping[str, Parts], runs: Mapping[str, int]) -> list[str]:
    """One line per source: what is not tool output, and the tool results under each row."""
    lines = [
        "| source | runs | recommended | not tool output | tool results: none | oracle | "
        "recommended | recommended − oracle |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for source, parts in table.items():
        total = sum(parts["none"].values()) or 1.0
        fixed = sum(parts["recommended"][p] for p in FIXED) / total
        tools = {row: _tools(parts[row]) / total for row in ROWS}
        billed = sum(parts["recommended"].values()) / total
        lines.append(
            f"| {source} | {runs[source]} | {billed:.3f} | {fixed:.3f} | {tools['none']:.3f} | "
            f"{tools['oracle']:.3f} | {tools['recommended']:.3f} | "
            f"{tools['recommended'] - tools['oracle']:.3f} |"
        )
    return lines


def source_table(parts: Parts) -> list[str]:
    """One source's parts, dearest first under no middleware (tools past ``TOP_TOOLS`` summed)."""
    total = sum(parts["none"].values()) or 1.0
    tools = sorted((p for p in parts["none"] if p not in FIXED), key=lambda p: -parts["none"][p])
    shown, rest = tools[:TOP_TOOLS], tools[TOP_TOOLS:]
    rows: list[tuple[str, list[float]]] = [
        (p, [parts[r][p] / total for r in ROWS]) for p in (*FIXED, *shown)
    ]
    if rest:
        label = f"results of {len(rest)} other tools"
        rows.append((label, [sum(parts[r][p] for p in rest) / total for r in ROWS]))
    rows.sort(key=lambda row: -row[1][0])
    lines = ["| part | none | oracle | recommended |", "|---|---:|---:|---:|"]
    lines += [f"| {p} | {n:.3f} | {o:.3f} | {r:.3f} |" for p, (n, o, r) in rows]
    sums = [sum(parts[r].values()) / total for r in ROWS]
    lines.append("| **all** | " + " | ".join(f"**{v:.3f}**" for v in sums) + " |")
    return lines


def markdown(
    table: Mapping[str, Parts], runs: Mapping[str, int], minutes: float, args: argparse.Namespace
) -> list[str]:
    counter = getattr(default_counter(), "encoding_name", None) or "estimate"
    limit = f" --limit {args.limit}" if args.limit else ""
    out = [
        "# Where the bill goes",
        "",
        f"Generated by `python -m benchmarks.bill_parts{limit} -j {args.jobs}` on "
        f"{time.strftime('%Y-%m-%d')} ({minutes:.1f} min; {platform.platform()}, "
        f"{os.cpu_count()} cores shared with other work, Python {platform.python_version()}; "
        f"tokens: {counter}), on `{args.directory}`: {runs['(all)']} runs.",
        "",
        "Each call's Anthropic-style billed input (cached prefix at 0.1, the rest at 1.25) split",
        "over the prompt's parts, as a share of what no middleware bills on the same source; a",
        "row's parts add up to its billed input (`benchmarks/room.md` has the same totals).",
        "*oracle*: the first-sight oracle of `benchmarks.room` (it reads the future; a bound).",
        "*not tool output*: tool schemas, system prompt, user messages and the agent's own turns",
        "under the recommended stack (it cuts long past inputs, so this can be below none's).",
        "*recommended − oracle*: what a first-sight shortening of tool output could still save,",
        "at best, keeping every line the agent went on to quote.",
        "",
        *summary(table, runs),
    ]
    for source, parts in table.items():
        if source != "(all)":
            out += ["", f"## {source}", "", *source_table(parts)]
    return [*out, ""]


def main(argv: Iterable[str] | None = None) -> int:
    parser = common.parser(__doc__, HERE / "bill_parts.md")
    args = parser.parse_args(list(argv) if argv is not None else None)
    done = common.measure_runs(args, measure_one)
    if done is None:
        return 1
    results, minutes = done
    runs: Counter[str] = Counter(source for source, _ in results)
    runs["(all)"] = len(results)
    table = pooled(results)
    print("\n".join(summary(table, runs)))
    Path(args.output).write_text("\n".join(markdown(table, runs, minutes, args)), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
