"""The room: how far a first-sight output shortening could go, and how much of it we take.

Usage (from the repository root)::

    TOKENLEAN_TIKTOKEN_DIR=../shared/tokenizers \\
        python -m benchmarks.room [TRAJECTORY_DIR] [-j JOBS] [--limit N]

Each trajectory is replayed through a real ``create_agent`` (the replay of
:mod:`tokenlean.replay`) five times, and every row is measured against no middleware on the
same runs, in one run:

- *none*: no middleware;
- *floor*: every tool result replaced by an empty string before the replay, so from its first
  sight on: what is left is what is not tool output at all (system prompt, tool schemas, user
  messages, the agent's own text and arguments), which no output shortening can go below;
- *oracle*: each tool result, from its first sight on, keeps exactly the lines holding a
  reference (:mod:`tokenlean.replay._refs`) that a later assistant turn uses and first appeared
  in that result, with a one-line marker per omitted run of lines. It reads the future: a
  bound, never a strategy;
- *recommended*: ``tokenlean.langchain.recommended_middleware("anthropic")`` as shipped;
- *always*: its shortener offering ``read_original`` from the first call (every shortening
  made, see ``benchmarks/raw_savings.py``).

The floor and the oracle edit the trajectory, not the agent: each tool message is edited once,
before the model first sees it, so the prompt cache behaves as it does under first-sight edits.
Reference recall is always measured against the *unedited* trajectory's learned references.
All rows are measured after the same round trip through an Anthropic Messages body. Writes
``benchmarks/room.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import _common as common
from benchmarks._common import measurer, shortener
from tokenlean.replay._formats import Trajectory, load_trajectory
from tokenlean.replay._metrics import RunMetrics, pool
from tokenlean.replay._refs import extract_refs, first_appearances, learned_references, message_refs
from tokenlean.tokens import default_counter
from tokenlean.transcript import Message

HERE = Path(__file__).parent
ROWS = ("none", "floor", "oracle", "recommended", "always")
STRATEGIES = ("recommended", "always")  # the rows whose share of the oracle's saving is reported


# -- the floor and the oracle: edits of the trajectory before the replay -----------------------


def _edit_tool_results(trajectory: Trajectory, edit: Callable[[int, Message], str]) -> Trajectory:
    messages = tuple(
        replace(m, content=edit(i, m)) if m.role == "tool" else m
        for i, m in enumerate(trajectory.messages)
    )
    return replace(trajectory, messages=messages)


def floor_trajectory(trajectory: Trajectory) -> Trajectory:
    """``trajectory`` with every tool result empty."""
    return _edit_tool_results(trajectory, lambda _i, _m: "")


def used_references(messages: Sequence[Message]) -> dict[int, frozenset[str]]:
    """For each tool message (by index), the references first seen there that a later
    assistant turn uses (its learned references, :func:`learned_references`)."""
    first_seen = first_appearances([message_refs(m) for m in messages])
    used: dict[int, set[str]] = defaultdict(set)
    for turn in learned_references(messages):
        for ref in turn.refs:
            used[first_seen[ref]].add(ref)
    return {index: frozenset(refs) for index, refs in used.items()}


def marker(omitted: int) -> str:
    return f"[... {omitted} line{'s' if omitted != 1 else ''} omitted]"


def oracle_text(text: str, keep: frozenset[str]) -> str:
    """The lines of ``text`` holding a reference in ``keep``, each omitted run of lines as one
    marker line (the whole text when every line is kept)."""
    out: list[str] = []
    omitted = 0
    for line in text.split("\n"):
        if keep and extract_refs(line) & keep:
            if omitted:
                out.append(marker(omitted))
                omitted = 0
            out.append(line)
        else:
            omitted += 1
    if omitted:
        out.append(marker(omitted))
    return "\n".join(out)


def oracle_trajectory(trajectory: Trajectory) -> Trajectory:
    """``trajectory`` with each tool result cut to the lines the agent later uses a reference
    of (references are found per line exactly as per message: they never span a newline)."""
    used = used_references(trajectory.messages)
    return _edit_tool_results(
        trajectory, lambda i, m: oracle_text(m.text, used.get(i, frozenset()))
    )


# -- one run -----------------------------------------------------------------------------------


def measure_one(path: str) -> list[RunMetrics]:
    """The five rows of one trajectory (recall always against the unedited trajectory)."""
    from tokenlean.langchain import recommended_middleware
    from tokenlean.replay._engine import replay
    from tokenlean.replay._raw import measure_bodies

    trajectory = load_trajectory(path)
    replays: dict[str, tuple[Trajectory, list[Any]]] = {
        "none": (trajectory, []),
        "floor": (floor_trajectory(trajectory), []),
        "oracle": (oracle_trajectory(trajectory), []),
        "recommended": (trajectory, recommended_middleware("anthropic")),
        "always": (trajectory, shortener("always")),
    }
    return [
        measure_bodies(trajectory, replay(edited, middleware), measurer(), strategy=name)
        for name, (edited, middleware) in replays.items()
    ]


def pooled(results: Sequence[Sequence[RunMetrics]]) -> dict[str, dict[str, RunMetrics]]:
    """Rows summed by source (then ``(all)``), by row name."""
    groups: dict[str, list[RunMetrics]] = defaultdict(list)
    for rows in results:
        for row in rows:
            groups[row.source].append(row)
            groups["(all)"].append(row)
    order = sorted(groups, key=lambda s: (s == "(all)", s))
    return {
        source: {n: pool(n, (r for r in groups[source] if r.strategy == n)) for n in ROWS}
        for source in order
    }


def ratio(rows: Mapping[str, RunMetrics], name: str, attr: str) -> float:
    value, base = getattr(rows[name], attr), getattr(rows["none"], attr)
    return float(value / base) if base else 1.0


def share(rows: Mapping[str, RunMetrics], name: str, attr: str) -> float | None:
    """The share of the oracle's saving ``name`` captures: (1 − it) / (1 − oracle)."""
    room = 1 - ratio(rows, "oracle", attr)
    return (1 - ratio(rows, name, attr)) / room if room > 1e-9 else None


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


# -- the report --------------------------------------------------------------------------------


def table(table: Mapping[str, Mapping[str, RunMetrics]], runs: Mapping[str, int]) -> list[str]:
    bills = ("floor", "oracle", "recommended", "always")
    head = (
        "| source | runs | calls | billed A: floor | oracle | recommended | always"
        " | billed O: floor | oracle | recommended | always"
        " | recall: floor | oracle | recommended | always"
        " | share of oracle's saving A: recommended | always | O: recommended | always"
        " | oracle's share of the floor's saving A |"
    )
    lines = [head, "|---|" + "---:|" * 20]
    for source, rows in table.items():
        a = [f"{ratio(rows, n, 'billed_anthropic'):.3f}" for n in bills]
        o = [f"{ratio(rows, n, 'billed_openai'):.3f}" for n in bills]
        recall = [f"{rows[n].recall:.3f}" for n in bills]
        shares = [_share(share(rows, n, "billed_anthropic")) for n in STRATEGIES]
        shares += [_share(share(rows, n, "billed_openai")) for n in STRATEGIES]
        floor_room = 1 - ratio(rows, "floor", "billed_anthropic")
        of_floor = (1 - ratio(rows, "oracle", "billed_anthropic")) / floor_room if floor_room else 0
        cells = " | ".join([*a, *o, *recall, *shares, f"{of_floor:.2f}"])
        lines.append(f"| {source} | {runs[source]} | {rows['none'].calls:,} | {cells} |")
    return lines


def lost_references(table: Mapping[str, Mapping[str, RunMetrics]]) -> list[str]:
    """Sources where the oracle did not keep every reference (it should, by construction)."""
    return [
        f"{source}: {rows['oracle'].refs_total - rows['oracle'].refs_retained} of "
        f"{rows['oracle'].refs_total}"
        for source, rows in table.items()
        if source != "(all)" and rows["oracle"].refs_retained < rows["oracle"].refs_total
    ]


EXPLANATION = [
    "Rows (`benchmarks/room.py`), each replayed through a real `create_agent` on the same runs:",
    "",
    "- *floor*: every tool result replaced by an empty string from its first sight on. What is",
    "  left (system prompt, tool schemas, user messages, the agent's own text and tool-call",
    "  arguments) is not tool output, and no output shortening can bill below it;",
    "- *oracle*: each tool result, from its first sight on, keeps exactly the lines holding a",
    "  reference that first appeared in it and that a later assistant turn uses (the learned",
    "  references of `tokenlean.replay._refs`), with one `[... N lines omitted]` line per",
    "  omitted run. It reads the future: a bound on first-sight line selection, never a",
    "  strategy. It keeps no error line, no context and nothing the agent read without",
    "  quoting, so its recall is 1.0 while a real agent on its prompts might do worse;",
    '- *recommended*: `recommended_middleware("anthropic")` as shipped (it also clears old',
    "  results and compresses old inputs, so it can bill below the oracle, which only selects",
    "  lines at first sight; it includes the loop guard, which ends a few runs early);",
    '- *always*: the recommended shortener with `offer_tool="always"` (`read_original` from',
    "  the first call, every shortening made).",
    "",
    "The floor and the oracle edit the trajectory before the replay, once per tool message, so",
    "the prompt cache sees what a first-sight edit gives it. Reference recall is measured",
    "against the unedited trajectory's references for every row. *share of oracle's saving*:",
    "(1 − row) / (1 − oracle), the billed ratios to no middleware on that source; above 1 the",
    "row saves more than the oracle (by clearing or compressing what the oracle keeps, at some",
    "recall). *oracle's share of the floor's saving*: (1 − oracle) / (1 − floor), how much of",
    "what tool output costs the agent did not need. `–`: the oracle saves nothing there.",
    "",
    "Two things to read with care:",
    "",
    "- the floor's recall is not 0: a reference learned from a tool output counts as retained",
    "  when it is anywhere in the prompt, and the agent's own earlier turns often repeat it (it",
    "  names a path it read in one call and uses it again ten calls later);",
    "- OpenAI-style, a prompt under 1,024 tokens gets no cached price at all, so on sources of",
    "  short runs (WebShop) cutting tool output pushes whole calls under that floor and the",
    "  floor and the oracle bill *more* than no middleware; the share is then not defined.",
    "",
    "Peers (llmslim, headroom, reasonblocks, LangChain's context editing) run in their own",
    "virtual environment (`make bench`); their billed input and recall per source are in",
    "`benchmarks/results.md` (measured without the Anthropic body round trip, against the same",
    "no-middleware baseline); their share of the oracle's saving is (1 − their billed) /",
    "(1 − this table's oracle) on the same source. `results.md` has no oracle or floor row.",
]


def markdown(
    measured: Mapping[str, Mapping[str, RunMetrics]],
    runs: Mapping[str, int],
    minutes: float,
    args: argparse.Namespace,
) -> list[str]:
    counter = getattr(default_counter(), "encoding_name", None) or "estimate"
    limit = f" --limit {args.limit}" if args.limit else ""
    which = "every run"
    if args.limit:
        which = f"the first {args.limit} runs of each source (file name order)"
    lost = lost_references(measured)
    return [
        "# The room: the floor, the first-sight oracle, and the share of it we take",
        "",
        f"Generated by `python -m benchmarks.room{limit} -j {args.jobs}` on "
        f"{time.strftime('%Y-%m-%d')} ({minutes:.1f} min; {platform.platform()}, "
        f"{os.cpu_count()} cores shared with other work, Python {platform.python_version()}; "
        f"tokens: {counter}), on {which} of `{args.directory}`: {runs['(all)']} runs.",
        "Billed input is cache-aware (A: Anthropic-style, O: OpenAI-style), as a ratio to no",
        "middleware on the same runs in this run; *none* is 1.000 everywhere.",
        "",
        *table(measured, runs),
        "",
        "References the oracle lost: " + ("; ".join(lost) if lost else "none") + ".",
        "",
        *EXPLANATION,
        "",
    ]


def main(argv: Iterable[str] | None = None) -> int:
    parser = common.parser(__doc__, HERE / "room.md")
    args = parser.parse_args(list(argv) if argv is not None else None)
    done = common.measure_runs(args, measure_one)
    if done is None:
        return 1
    results, minutes = done
    measured = pooled(results)
    runs: dict[str, int] = defaultdict(int)
    for rows in results:
        runs[rows[0].source] += 1
        runs["(all)"] += 1
    lines = table(measured, runs)
    print("\n".join(lines))
    Path(args.output).write_text("\n".join(markdown(measured, runs, minutes, args)), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
