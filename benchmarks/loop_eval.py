"""Evaluate loop detection on real trajectories and on looping variants built from them.

For every real trajectory in ``shared/data/trajectories`` (outcome labels from ``index.jsonl``)
and for looping variants of it, replay the run twice through a real ``create_agent`` (no
middleware, and :class:`~tokenlean.langchain.LoopGuardMiddleware` with defaults) and report:
how often the guard responds (nudge / final answer / end), and what it saves.

Variants (each at 1/4, 1/2 and 3/4 of the run's tool-using turns; the run is cut there):

- ``repeat``: one real turn, then ``k`` copies of it with the identical observation;
- ``repeat-noisy``: the same, but every copy's observation gets a line with a different
  timestamp, pid and duration (what canonicalisation must see through);
- ``cycle``: two consecutive real turns with different actions, then ``k`` copies of the pair.

Savings, two ways: *measured* is baseline minus guard in the replay, where the scripted model
ignores the nudge and ``tool_choice`` (the worst case: only ending the run saves anything);
*if the nudge works* counts the baseline calls after the one that received the nudge (the
prompt tokens of those calls), i.e. what a model that answers at once would save.

The reference firing rule of ``TokenSavingMiddleware`` (``streak > 0.7 or (hedge > 0.6 and
diversity > 0.5)``) is also evaluated offline with :func:`tokenlean.loop_signals` as its
``signals_fn``, from call 0 and from call 40 (the reference ``early_exit_min_call_index``).

Run from the repository root::

    python -m benchmarks.loop_eval -j 2 --markdown benchmarks/loops.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from tokenlean.langchain._adapter import to_view
from tokenlean.langchain.loop_guard import ID_PREFIX, LoopGuardMiddleware
from tokenlean.loop_guard._detect import loop_signals
from tokenlean.loop_guard._keys import step_key
from tokenlean.loop_guard._step import Step
from tokenlean.loop_guard._steps import build_steps
from tokenlean.replay._engine import replay
from tokenlean.replay._formats import Trajectory, load_trajectory
from tokenlean.replay._metrics import CallMetrics, measure_calls
from tokenlean.replay._runner import shared_measurer
from tokenlean.tokens import tool_schema_text
from tokenlean.transcript import Message

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "trajectories"
FRACTIONS = (0.25, 0.5, 0.75)
KINDS = ("repeat", "repeat-noisy", "cycle")


@dataclass
class Row:
    """One replayed run (real or variant) with and without the guard."""

    id: str
    kind: str  # "real" or a variant kind
    resolved: bool | None
    source: str  # the folder the run comes from (shared/data/trajectories/<source>/)
    loop_start_call: int | None  # first call that sees a looping copy (variants)
    base_calls: int = 0
    base_tokens: int = 0
    base_billed: float = 0.0
    guard_calls: int = 0
    guard_tokens: int = 0
    guard_billed: float = 0.0
    guard_ms_per_call: float = 0.0
    guard_prefix_breaks: int = 0
    responses: list[str] = field(default_factory=list)
    patterns: list[str] = field(default_factory=list)
    first_fire_call: int | None = None
    after_fire_calls: int = 0
    after_fire_tokens: int = 0
    loop_tokens: int = 0  # baseline prompt tokens of the calls from the loop's start (variants)
    ref_fire_call: int | None = None  # reference rule with loop_signals, from call 0
    ref_fire_call_40: int | None = None  # ... from call 40
    error: str | None = None

    @property
    def group(self) -> str:
        if self.kind != "real":
            return f"variant: {self.kind}"
        return f"real: {self.label}"

    @property
    def label(self) -> str:
        if self.resolved is None:
            return "unlabelled"
        return "resolved" if self.resolved else "failed"


# -- variants ------------------------------------------------------------------------------


def _tool_turns(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """(assistant index, end index) of each tool-using turn: the turn and its results."""
    position = {m.tool_call_id: i for i, m in enumerate(messages) if m.role == "tool"}
    turns = []
    for i, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            ends = [position.get(c.id, i) for c in message.tool_calls]
            turns.append((i, max(ends) + 1))
    return turns


def _copy_turn(
    messages: Sequence[Message], start: int, end: int, tag: str, noise: int | None
) -> list[Message]:
    turn = messages[start]
    ids = {c.id for c in turn.tool_calls}
    calls = tuple(replace(c, id=f"{c.id}-{tag}") for c in turn.tool_calls)
    # Recorded ids may be missing: derive unique ones from the position (LangGraph merges
    # messages that share an id).
    out = [replace(turn, id=f"{turn.id or f'ai{start}'}-{tag}", tool_calls=calls)]
    for index, result in enumerate(messages[start + 1 : end], start=start + 1):
        if result.role != "tool" or result.tool_call_id not in ids:
            continue
        content = result.content
        if noise is not None and isinstance(content, str):
            content += (
                f"\n[2024-05-{1 + noise % 28:02d} 10:{noise % 60:02d}:17.{noise:03d}] "
                f"pid {4000 + 7 * noise} finished in 0.{noise:02d}3s"
            )
        out.append(
            replace(
                result,
                id=f"{result.id or f'tool{index}'}-{tag}",
                tool_call_id=f"{result.tool_call_id}-{tag}",
                content=content,
            )
        )
    return out


def _turn_key(messages: Sequence[Message], start: int, end: int) -> tuple[tuple[str, str], ...]:
    return tuple(step_key(s) for s in build_steps(messages[start:end]))


def make_variant(
    trajectory: Trajectory, kind: str, fraction: float, k: int
) -> tuple[Trajectory, int] | None:
    """The looping variant and the number of assistant turns before the loop, or ``None``."""
    messages = trajectory.messages
    turns = _tool_turns(messages)
    width = 2 if kind == "cycle" else 1
    if len(turns) < width:
        return None
    pick = min(int(fraction * (len(turns) - 1)), len(turns) - width)
    order = [*range(pick, len(turns) - width + 1), *range(pick - 1, -1, -1)]
    chosen = next((i for i in order if _valid(messages, turns, i, width)), None)
    if chosen is None:
        return None
    block = turns[chosen : chosen + width]
    real_round = messages[: block[-1][1]]
    loop_start = sum(1 for m in real_round if m.role == "assistant")  # first call of a copy
    noisy = kind == "repeat-noisy"
    # Noisy variants re-emit the real round too (round 0), so that it carries a noise line.
    out = list(messages[: block[0][0]] if noisy else real_round)
    for j in range(0 if noisy else 1, k + 1):
        for start, end in block:
            out += _copy_turn(messages, start, end, f"loop{j}", j if noisy else None)
    variant = replace(trajectory, id=f"{trajectory.id}~{kind}@{fraction}", messages=tuple(out))
    return variant, loop_start


def _valid(messages: Sequence[Message], turns: list[tuple[int, int]], i: int, width: int) -> bool:
    if width == 1:
        return True
    (a_start, a_end), (b_start, b_end) = turns[i], turns[i + 1]
    between = messages[a_end:b_start]
    if any(m.role == "assistant" for m in between):
        return False  # not consecutive steps
    return _turn_key(messages, a_start, a_end) != _turn_key(messages, b_start, b_end)


# -- measuring ------------------------------------------------------------------------------


def _per_call(calls: Iterable[Any]) -> list[CallMetrics]:
    scripted = [c for c in calls if c.scripted]
    prompts = [
        shared_measurer().measure(tool_schema_text(c.tools), to_view(c.messages)) for c in scripted
    ]
    return measure_calls(prompts, [])


def _first_guard_call(calls: Sequence[Any]) -> int | None:
    for index, call in enumerate(c for c in calls if c.scripted):
        if any(str(m.id or "").startswith(ID_PREFIX) for m in call.messages):
            return index
    return None


def _reference_fire(trajectory: Trajectory, min_call: int) -> int | None:
    """First call at which the reference rule fires with ``loop_signals`` as signals_fn."""
    steps = build_steps(trajectory.messages)
    per_turn = [max(1, len(m.tool_calls)) for m in trajectory.messages if m.role == "assistant"]
    seen = 0
    for call, width in enumerate(per_turn):
        if call >= min_call and _reference_rule(steps[:seen]):
            return call
        seen += width
    return None


def _reference_rule(steps: Sequence[Step]) -> bool:
    s = loop_signals(steps)
    return s["streak"] > 0.7 or (s["hedge"] > 0.6 and s["diversity"] > 0.5)


def evaluate(trajectory: Trajectory, kind: str, loop_start: int | None) -> Row:
    row = Row(trajectory.id, kind, trajectory.resolved, trajectory.source_name, loop_start)
    try:
        base = _per_call(replay(trajectory, []).calls)
        guard = LoopGuardMiddleware()
        result = replay(trajectory, [guard])
        guarded = _per_call(result.calls)
    except Exception as exc:  # one broken run must not hide the others
        row.error = f"{type(exc).__name__}: {exc}"
        return row
    row.base_calls, row.guard_calls = len(base), len(guarded)
    row.base_tokens = sum(c.prompt_tokens for c in base)
    row.guard_tokens = sum(c.prompt_tokens for c in guarded)
    row.base_billed = sum(c.billed_anthropic for c in base)
    row.guard_billed = sum(c.billed_anthropic for c in guarded)
    row.guard_prefix_breaks = sum(c.break_at is not None for c in guarded)
    row.guard_ms_per_call = 1000 * result.middleware_seconds / max(1, len(result.calls))
    row.responses = [e.response for e in guard.stats.events]
    row.patterns = [e.pattern for e in guard.stats.events]
    if loop_start is not None:
        row.loop_tokens = sum(c.prompt_tokens for c in base[loop_start:])
    row.first_fire_call = _first_guard_call(result.calls)
    if row.first_fire_call is not None:
        after = base[row.first_fire_call + 1 :]
        row.after_fire_calls = len(after)
        row.after_fire_tokens = sum(c.prompt_tokens for c in after)
    row.ref_fire_call = _reference_fire(trajectory, 0)
    row.ref_fire_call_40 = _reference_fire(trajectory, 40)
    return row


def _task(path: str, kind: str, fraction: float, k: int) -> Row | None:
    trajectory = load_trajectory(path)
    if kind == "real":
        return evaluate(trajectory, "real", None)
    made = make_variant(trajectory, kind, fraction, k)
    return evaluate(made[0], kind, made[1]) if made else None


# -- report ---------------------------------------------------------------------------------


def summarise(rows: Sequence[Row]) -> list[dict[str, Any]]:
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.group, []).append(row)
    out = []
    for name in sorted(groups, key=_group_order):
        members = [r for r in groups[name] if r.error is None]
        fired = [r for r in members if r.responses]
        out.append(
            {
                "set": name,
                "runs": len(members),
                "fired": len(fired),
                "nudge": sum(r.responses.count("nudge") for r in members),
                "final": sum(r.responses.count("final") for r in members),
                "end": sum(r.responses.count("end") for r in members),
                "patterns": _pattern_counts(members),
                "latency": _latency(fired),
                "calls_saved": sum(r.base_calls - r.guard_calls for r in members),
                "tokens_saved": sum(r.base_tokens - r.guard_tokens for r in members),
                "base_tokens": sum(r.base_tokens for r in members),
                "loop_tokens": sum(r.loop_tokens for r in members),
                "billed_saved": sum(r.base_billed - r.guard_billed for r in members),
                "base_billed": sum(r.base_billed for r in members),
                "nudge_calls_saved": sum(r.after_fire_calls for r in members),
                "nudge_tokens_saved": sum(r.after_fire_tokens for r in members),
                "ref_fired": sum(r.ref_fire_call is not None for r in members),
                "ref_fired_40": sum(r.ref_fire_call_40 is not None for r in members),
                "ms_per_call": _mean([r.guard_ms_per_call for r in members]),
                "prefix_breaks": sum(r.guard_prefix_breaks for r in members),
                "errors": len(groups[name]) - len(members),
            }
        )
    return out


def by_source(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """Per source: how often the guard fired on real runs (by label) and on the variants."""
    sources: dict[str, list[Row]] = {}
    for row in rows:
        if row.error is None:
            sources.setdefault(row.source, []).append(row)
    out = []
    for name in sorted(sources):
        real = [r for r in sources[name] if r.kind == "real"]
        variants = [r for r in sources[name] if r.kind != "real"]
        entry: dict[str, Any] = {"source": name}
        for label in ("resolved", "failed", "unlabelled"):
            runs = [r for r in real if r.label == label]
            entry[label] = (sum(bool(r.responses) for r in runs), len(runs))
            entry[f"ref_{label}"] = sum(r.ref_fire_call is not None for r in runs)
        entry["real_tokens_saved"] = sum(r.base_tokens - r.guard_tokens for r in real)
        entry["variants"] = (sum(bool(r.responses) for r in variants), len(variants))
        entry["ref_variants"] = sum(r.ref_fire_call is not None for r in variants)
        entry["patterns"] = _pattern_counts(variants)
        entry["latency"] = _latency([r for r in variants if r.responses])
        entry["tokens_saved"] = sum(r.base_tokens - r.guard_tokens for r in variants)
        entry["base_tokens"] = sum(r.base_tokens for r in variants)
        entry["loop_tokens"] = sum(r.loop_tokens for r in variants)
        entry["nudge_tokens_saved"] = sum(r.after_fire_tokens for r in variants)
        entry["errors"] = sum(r.error is not None for r in rows if r.source == name)
        out.append(entry)
    return out


def _group_order(name: str) -> tuple[int, str]:
    order = ["real: resolved", "real: failed", "real: unlabelled"]
    return (order.index(name) if name in order else len(order), name)


def _pattern_counts(rows: Sequence[Row]) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        if row.patterns:
            counts[row.patterns[0]] = counts.get(row.patterns[0], 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-"


def _latency(fired: Sequence[Row]) -> str:
    """Calls into the loop before the first response (variants only)."""
    gaps = [
        r.first_fire_call - r.loop_start_call
        for r in fired
        if r.loop_start_call is not None and r.first_fire_call is not None
    ]
    inside = [g for g in gaps if g >= 0]
    text = f"{min(inside)}-{max(inside)}" if inside else "-"
    early = len(gaps) - len(inside)
    return f"{text} ({early} fired earlier, in the real part)" if early else text


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def source_markdown(sources: Sequence[dict[str, Any]]) -> list[str]:
    def fired(pair: tuple[int, int]) -> str:
        return f"{pair[0]} / {pair[1]}" if pair[1] else "-"

    lines = [
        "| source | guard fired on resolved | on failed | on unlabelled "
        "| reference rule on real (resolved / failed / unlabelled) | variants fired "
        "| first pattern (variants) | calls into loop | tokens saved on variants "
        "(of run / of loop) | if nudge works | tokens saved on real runs |",
        "|---|---:|---:|---:|---|---:|---|---|---:|---:|---:|",
    ]
    for s in sources:
        lines.append(
            f"| {s['source']} | {fired(s['resolved'])} | {fired(s['failed'])} | "
            f"{fired(s['unlabelled'])} | {s['ref_resolved']} / {s['ref_failed']} / "
            f"{s['ref_unlabelled']} | {fired(s['variants'])} | {s['patterns']} | "
            f"{s['latency']} | {s['tokens_saved']:,} ({_pct(s['tokens_saved'], s['base_tokens'])}"
            f" / {_pct(s['tokens_saved'], s['loop_tokens'])}) | {s['nudge_tokens_saved']:,} | "
            f"{s['real_tokens_saved']:,} |"
        )
    return lines


def markdown(summary: Sequence[dict[str, Any]], rows: Sequence[Row], k: int, command: str) -> str:
    pct = _pct
    lines = [
        "| set | runs | fired | nudge / final / end | first pattern | calls into loop "
        "| calls saved | tokens saved (of run / of loop) | billed saved (Anthropic) "
        "| if nudge works: calls / tokens | reference rule fires (call 0 / 40) "
        "| prefix breaks | guard ms/call |",
        "|---|---:|---:|---|---|---|---:|---:|---:|---|---|---:|---:|",
    ]
    for s in summary:
        lines.append(
            f"| {s['set']} | {s['runs']} | {s['fired']} | {s['nudge']} / {s['final']} / "
            f"{s['end']} | {s['patterns']} | {s['latency']} | {s['calls_saved']} | "
            f"{s['tokens_saved']:,} ({pct(s['tokens_saved'], s['base_tokens'])} / "
            f"{pct(s['tokens_saved'], s['loop_tokens'])}) | "
            f"{s['billed_saved']:,.0f} ({pct(s['billed_saved'], s['base_billed'])}) | "
            f"{s['nudge_calls_saved']} / {s['nudge_tokens_saved']:,} | "
            f"{s['ref_fired']} / {s['ref_fired_40']} | {s['prefix_breaks']} | "
            f"{s['ms_per_call']:.2f} |"
        )
    fired_real = [r for r in rows if r.kind == "real" and r.responses]
    missed = [r for r in rows if r.kind != "real" and not r.responses and r.error is None]
    lines += ["", "By source (fired / runs):", "", *source_markdown(by_source(rows))]
    lines += ["", f"Copies per variant: k = {k}. Command: `{command}`", ""]
    lines += [f"- real run that fired: `{r.id}` ({r.group}), {_events(r)}" for r in fired_real]
    lines += [f"- variant that did not fire: `{r.id}`" for r in missed]
    lines += [f"- error: `{r.id}` ({r.kind}): {r.error}" for r in rows if r.error is not None]
    return "\n".join(lines) + "\n"


def _events(row: Row) -> str:
    pairs = ", ".join(f"{a} ({p})" for a, p in zip(row.responses, row.patterns, strict=True))
    if row.first_fire_call is None:  # the check after the last recorded call: nothing to save
        return f"first response after the last recorded call: {pairs}"
    return f"first response at call {row.first_fire_call}: {pairs}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="?", default=str(DATA))
    parser.add_argument("-j", "--jobs", type=int, default=1)
    parser.add_argument("-k", type=int, default=8, help="copies of the looping turn(s)")
    parser.add_argument(
        "--source", action="append", help="only runs of this source (folder); repeatable"
    )
    parser.add_argument("--json", help="write every row here")
    parser.add_argument("--markdown", help="write the table here")
    args = parser.parse_args(argv)
    root = Path(args.data)
    index = [json.loads(line) for line in (root / "index.jsonl").open(encoding="utf-8")]
    if args.source:
        index = [r for r in index if Path(r["file"]).parent.name in args.source]
    tasks = [(str(root / r["file"]), "real", 0.0, args.k) for r in index]
    tasks += [
        (str(root / r["file"]), kind, f, args.k) for r in index for kind in KINDS for f in FRACTIONS
    ]
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = [r for r in pool.map(_task, *zip(*tasks, strict=True), chunksize=4) if r is not None]
    summary = summarise(rows)
    command = "python -m benchmarks.loop_eval " + " ".join(sys.argv[1:] if argv is None else argv)
    table = markdown(summary, rows, args.k, command.strip())
    print(table)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"summary": summary, "rows": [asdict(r) for r in rows]}, indent=1),
            encoding="utf-8",
        )
    if args.markdown:
        Path(args.markdown).write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENLEAN_TIKTOKEN_DIR", str(DATA.parents[1] / "tokenizers"))
    raise SystemExit(main())
