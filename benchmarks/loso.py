"""Leave one source out: tune on the other sources, confirm on the one left out.

Usage (from the repository root)::

    python -m benchmarks.loso [TRAJECTORY_DIR] -c NAME [-c NAME ...] [--plugin MODULE] [-j 2]
        [--by both|source|family]

Every candidate (a registered strategy; a ``--plugin`` module registers more, and its ``GRID``
list, if any, adds them to the candidates) is replayed once over every trajectory, with ``none``
as the baseline. Results are cached in a JSON file per candidate name, keyed by the trajectory
set, a hash of tokenlean's source and a hash of the candidate's factory (its code and the values
it closes over), so a rerun replays only what is new or changed.

Then, for each source S (a folder of trajectories), the candidates are judged on the *other*
sources only: among those with recall >= ``--floor`` on every other source with at least
``--min-refs`` references, pooled recall over the others >= ``--pooled-floor``, and tokens sent
and billed input <= none on every other source, the one with the lowest pooled billed input
(Anthropic-style) is picked — unless another billing at most ``--keep-within`` more keeps more
references on its worst source (when in doubt, keep) — and its figures on S, never seen while
choosing, are reported.

Leaving one source out is not enough when two sources record the same agent, so (``--by family``
or ``both``, the default) each agent family in :data:`FAMILIES` is also held out at once: the pick
is made by the same rules on the sources of the other families only, and its figures are reported
on each source of the family held out. A source in no family is its own family.
The tables go to ``benchmarks/loso.md`` with the command that produced them.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenlean.replay import _report as report
from tokenlean.replay import _strategies as strategies
from tokenlean.replay._formats import Trajectory, load_trajectory
from tokenlean.replay._metrics import RunMetrics, pool, relative
from tokenlean.replay._runner import ReplayReport, run_replay, stderr_progress

HERE = Path(__file__).parent
BASELINE = strategies.BASELINE

#: Agent families: the sources that record the same agent (``shared/data/SOURCES.md``), held out
#: together by :func:`leave_one_family_out`. A source named in none is its own family.
FAMILIES: dict[str, tuple[str, ...]] = {
    "claude_code": ("entire_claude_code", "openagents_claude_code", "claude_code_2_1_2xx"),
    "codex": ("codex_cli_rollouts", "codex_desktop_0144"),
    "opencode_pi": ("entire_opencode_pi", "opencode_1_14"),
    "swe_agents": ("sweagent", "miniswe_deepseek"),
    "customer_service": ("tau2_retail_gpt41", "tau2_telecom_gpt41"),
    "qa_research": ("reflexion_hotpotqa_react", "tapeagents_gaia"),
    "web": ("react_webshop", "tapeagents_workarena"),
}
BY = ("both", "source", "family")  # what --by may hold out


KEEP = ("worst", "every")  # what --keep may say: when in doubt, keep for which sources


@dataclass(frozen=True)
class Rules:
    """What a pick must satisfy on the sources it is tuned on."""

    floor: float = 0.97  # recall on every source with >= min_refs references
    pooled_floor: float = 0.98  # recall pooled over the sources tuned on
    min_refs: int = report.MIN_REFS
    # When in doubt, keep: a pick may bill up to this much more (x none, pooled) than the cheapest
    # eligible candidate when its worst source keeps more references (at the 3 decimals reported).
    keep_within: float = 0.005
    # ``"worst"``: of those, the one whose worst source keeps most; ``"every"``: the cheapest of
    # those keeping, on every source tuned on, as many references as any of them does there
    # (within one): where recall stops rising, for a rule that cuts what the agent asked to read
    keep: str = "worst"

    def __post_init__(self) -> None:
        if self.keep not in KEEP:
            raise ValueError(f"keep must be one of {KEEP}, got {self.keep!r}")
        for name in ("floor", "pooled_floor", "keep_within"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")
        if self.min_refs < 0:
            raise ValueError(f"min_refs must be >= 0, got {self.min_refs!r}")


@dataclass(frozen=True)
class Figures:
    """One candidate on a set of sources: ratios to none, recall, and the rules it breaks."""

    billed: float  # pooled billed input (Anthropic-style), x none
    tokens: float  # pooled tokens sent, x none
    recall: float  # pooled
    refs: int
    worst_recall: float | None  # lowest recall among sources with >= min_refs references
    worst_recall_source: str | None
    broken: tuple[str, ...]  # why it is not eligible (empty: eligible)


def figures(
    result: ReplayReport,
    name: str,
    sources: Iterable[str],
    rules: Rules,
    *,
    pooled_rule: bool = True,
) -> Figures:
    """``name`` pooled over ``sources`` (each ratio against none of the same sources).

    ``pooled_rule=False`` skips the pooled-recall rule (a single held-out source is judged by the
    per-source rules only).
    """
    sources = list(sources)
    row = pool(name, _runs(result, name, sources))
    base = pool(BASELINE, _runs(result, BASELINE, sources))
    ratio = relative(row, base)
    broken: list[str] = []
    worst: tuple[float, str] | None = None
    for source in sources:
        one, one_base = result.by_source[source][name], result.by_source[source][BASELINE]
        if one_base.refs_total >= rules.min_refs:
            worst = min(worst or (one.recall, source), (one.recall, source))
            if one.recall < rules.floor:
                broken.append(f"recall {one.recall:.3f} on {source}")
        if one.billed_anthropic > one_base.billed_anthropic + 1e-9:
            broken.append(f"billed above none on {source}")
        if one.tokens_sent > one_base.tokens_sent:
            broken.append(f"tokens above none on {source}")
    if pooled_rule and row.recall < rules.pooled_floor:
        broken.append(f"pooled recall {row.recall:.3f}")
    if _failed(result, name, sources):
        broken.append("failed runs")
    return Figures(
        billed=ratio["billed_anthropic"],
        tokens=ratio["tokens_sent"],
        recall=row.recall,
        refs=row.refs_total,
        worst_recall=worst[0] if worst else None,
        worst_recall_source=worst[1] if worst else None,
        broken=tuple(broken),
    )


def _runs(result: ReplayReport, name: str, sources: Sequence[str]) -> list[RunMetrics]:
    return [r for r in result.runs if r.strategy == name and r.source in sources]


def _failed(result: ReplayReport, name: str, sources: Sequence[str]) -> bool:
    return any(r.error for r in result.runs if r.strategy == name and r.source in sources)


@dataclass(frozen=True)
class Fold:
    """One held-out source: what was picked on the others, and how it does on the held-out one."""

    held_out: str
    pick: str  # BASELINE when no candidate was eligible
    tuned: Figures  # the pick on the other sources
    held: Figures  # the pick on the held-out source alone
    eligible: int  # candidates eligible on the other sources
    family: str = ""  # the family held out with it (leave_one_family_out); "" alone
    tuned_on: tuple[str, ...] = ()  # the sources the pick was made on


def pick(
    result: ReplayReport, candidates: Sequence[str], sources: Sequence[str], rules: Rules
) -> tuple[str, Figures, int]:
    """The eligible candidate with the lowest pooled billed input on ``sources`` (ties: name),
    unless one billing at most ``rules.keep_within`` more keeps more on its worst source.
    """
    judged = [(figures(result, name, sources, rules), name) for name in candidates]
    ok = sorted((f.billed, name, f) for f, name in judged if not f.broken)
    if not ok:
        return BASELINE, figures(result, BASELINE, sources, rules), 0
    near = [row for row in ok if row[0] <= ok[0][0] + rules.keep_within + 1e-12]
    if rules.keep == "every":
        kept = {name: _kept_per_source(result, name, sources) for _, name, _ in near}
        most = {s: max(k[s] for k in kept.values()) for s in sources}
        _, name, chosen = next(r for r in near if all(kept[r[1]][s] + 1 >= most[s] for s in most))
        return name, chosen, len(ok)
    _, name, chosen = max(near, key=lambda row: (_kept(row[2]), -row[0]))
    return name, chosen, len(ok)


def _kept_per_source(result: ReplayReport, name: str, sources: Sequence[str]) -> dict[str, int]:
    """The references ``name`` keeps on each of ``sources``."""
    return {s: result.by_source[s][name].refs_retained for s in sources}


def _kept(f: Figures) -> int:
    """Worst-source recall in thousandths, as the tables show it (no judged source: all kept)."""
    return 1000 if f.worst_recall is None else round(f.worst_recall * 1000)


def leave_one_out(result: ReplayReport, candidates: Sequence[str], rules: Rules) -> list[Fold]:
    """A fold per source: pick on the others, measure on the one left out."""
    sources = list(result.by_source)
    folds = []
    for held_out in sources:
        others = [s for s in sources if s != held_out]
        name, tuned, eligible = pick(result, candidates, others, rules)
        held = figures(result, name, [held_out], rules, pooled_rule=False)
        folds.append(Fold(held_out, name, tuned, held, eligible, tuned_on=tuple(others)))
    return folds


def family_of(source: str, families: Mapping[str, Sequence[str]] = FAMILIES) -> str:
    """The family ``source`` belongs to: its own name when ``families`` names it in none."""
    return next((f for f, members in families.items() if source in members), source)


def by_family(
    sources: Iterable[str], families: Mapping[str, Sequence[str]] = FAMILIES
) -> dict[str, list[str]]:
    """``sources`` grouped by family (families in name order, sources in the order given)."""
    groups: dict[str, list[str]] = {}
    for source in sources:
        groups.setdefault(family_of(source, families), []).append(source)
    return dict(sorted(groups.items()))


def leave_one_family_out(
    result: ReplayReport,
    candidates: Sequence[str],
    rules: Rules,
    families: Mapping[str, Sequence[str]] = FAMILIES,
) -> list[Fold]:
    """A fold per source, grouped by family: each family's pick is made on the sources of the
    other families only (by :func:`pick`), then measured on each source of the family alone.
    Empty when the sources are all of one family (nothing would be left to pick on).
    """
    groups = by_family(result.by_source, families)
    if len(groups) < 2:
        return []
    folds = []
    for family, held_out in groups.items():
        others = [s for s in result.by_source if s not in held_out]
        name, tuned, eligible = pick(result, candidates, others, rules)
        for source in held_out:
            held = figures(result, name, [source], rules, pooled_rule=False)
            folds.append(Fold(source, name, tuned, held, eligible, family, tuple(others)))
    return folds


# -- cache ---------------------------------------------------------------------------------------


def code_key() -> str:
    """A hash of tokenlean's source: any change to it invalidates every cached replay."""
    import tokenlean

    digest = hashlib.sha256()
    for path in sorted(Path(tokenlean.__file__).parent.rglob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def strategy_key(name: str) -> str:
    """A hash of what builds strategy ``name``: its factory's code and the values it closes over
    (e.g. the options of a shortener variant), so editing one variant of a grid replays only it.
    """
    factory = strategies.get(name).factory
    digest = hashlib.sha256(name.encode())
    code = getattr(factory, "__code__", None)
    if code is None:  # a class or builtin (``list`` for none)
        digest.update(repr(factory).encode())
    else:
        digest.update(code.co_code + repr(code.co_consts).encode() + repr(code.co_names).encode())
        for cell in getattr(factory, "__closure__", None) or ():
            digest.update(repr(cell.cell_contents).encode())
    return digest.hexdigest()[:16]


def data_key(trajectories: Sequence[Trajectory]) -> str:
    """A hash of the trajectory set (ids, sources and message counts)."""
    digest = hashlib.sha256()
    for t in sorted(trajectories, key=lambda t: t.id):
        digest.update(f"{t.source_name}/{t.id}/{len(t.messages)}\n".encode())
    return digest.hexdigest()[:16]


def replay_cached(
    trajectories: Sequence[Trajectory],
    names: Sequence[str],
    *,
    cache: Path,
    plugins: Sequence[str],
    jobs: int | None,
) -> tuple[ReplayReport, int]:
    """Every name's runs, replaying only the names whose cached entry is missing or stale; and
    how many were replayed.
    """
    base = f"{code_key()}:{data_key(trajectories)}"
    keys = {n: f"{base}:{strategy_key(n)}" for n in names}
    stored = json.loads(cache.read_text()) if cache.is_file() else {}
    entries: dict[str, Any] = stored.get("entries", {})
    todo = [n for n in names if entries.get(n, {}).get("key") != keys[n]]
    if todo:
        print(f"replaying {len(todo)} of {len(names)}: {', '.join(todo)}", file=sys.stderr)
        fresh = run_replay(trajectories, todo, jobs=jobs, plugins=plugins, progress=stderr_progress)
        for name in todo:
            runs = [r.to_dict() for r in fresh.runs if r.strategy == name]
            entries[name] = {"key": keys[name], "counter": fresh.counter, "runs": runs}
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"entries": entries}) + "\n", encoding="utf-8")
    counters = {entries[n]["counter"] for n in names}
    data = {
        "counter": " + ".join(sorted(counters)),
        "pooled": [{"strategy": n} for n in names],
        "runs": [run for n in names for run in entries[n]["runs"]],
    }
    return report.from_json(data), len(todo)


# -- output --------------------------------------------------------------------------------------


def markdown(
    result: ReplayReport,
    candidates: Sequence[str],
    rules: Rules,
    command: str,
    timing: str,
    *,
    by: str = "both",
    families: Mapping[str, Sequence[str]] = FAMILIES,
) -> str:
    """The report: a table per kind of fold ``by`` names (``source``, ``family`` or ``both``),
    then the pick on all sources, each candidate per source and why it is not eligible."""
    if by not in BY:
        raise ValueError(f"by must be one of {', '.join(BY)}, got {by!r}")
    everywhere = pick(result, candidates, list(result.by_source), rules)
    title = {
        "source": "Leave one source out",
        "family": "Leave one agent family out",
        "both": "Leave one source out, and one agent family out",
    }[by]
    lines = [
        f"# {title}",
        "",
        f"Produced by `{command}` ({timing}), over"
        f" {len({r.trajectory for r in result.runs})} trajectories from"
        f" {len(result.by_source)} sources. Tokens counted with: {result.counter}.",
        "",
        f"Candidates: {', '.join(f'`{c}`' for c in candidates)}.",
        "",
    ]
    if by != "family":
        if by == "both":
            lines += ["## One source held out", ""]
        lines += _source_section(result, candidates, rules)
    if by != "source":
        if by == "both":
            lines += ["", "## One agent family held out", ""]
        lines += _family_section(result, candidates, rules, families)
    name, tuned, eligible = everywhere
    lines += [
        "",
        f"Picked on all sources together: **{name}** ({eligible} eligible), billed"
        f" {tuned.billed:.3f} x none at pooled recall {tuned.recall:.3f}"
        f" (worst {_worst(tuned)}).",
        "",
        "## Candidates per source",
        "",
        "Each cell: billed input (Anthropic-style) x none / reference recall.",
        "",
        report.source_matrix(result),
        "",
        "## Why candidates are not eligible on all sources",
        "",
    ]
    for name in candidates:
        broken = figures(result, name, list(result.by_source), rules).broken
        lines.append(f"- `{name}`: {'; '.join(broken) if broken else 'eligible'}")
    return "\n".join(lines) + "\n"


_FOLD_HEAD = (
    "| held out | refs | pick | eligible | tuned: billed | tuned: worst recall"
    " | held out: billed | held out: tokens | held out: recall | held out: holds |"
)


def _rules_text(rules: Rules, other: str) -> str:
    """How a pick is made on the sources tuned on (each an ``other``: "other source"...)."""
    return (
        "the lowest pooled billed input (Anthropic-style, x none) among those with recall"
        f" >= {rules.floor} on every {other} with >= {rules.min_refs} references, pooled"
        f" recall >= {rules.pooled_floor}, and tokens sent and billed <= none on every {other}"
        " (`none` when no candidate qualifies); when in doubt, keep: of the eligible"
        f" candidates billing at most {rules.keep_within} more than that, "
        + (
            "the cheapest that keeps, on every source tuned on, as many references as any of"
            " them does there (within one): where recall stops rising."
            if rules.keep == "every"
            else "the one whose worst source keeps the most references (to the 3 decimals"
            " shown; ties: the cheapest)."
        )
    )


def _holds_text(rules: Rules) -> str:
    return (
        f"it holds there when recall >= {rules.floor} (if the source has >= {rules.min_refs}"
        " references) and tokens and billed <= none."
    )


def _source_section(result: ReplayReport, candidates: Sequence[str], rules: Rules) -> list[str]:
    lines = [
        "For each source, a candidate is picked using only the other sources: "
        + _rules_text(rules, "other source")
        + " Then its figures on the source left out; "
        + _holds_text(rules),
        "",
        _FOLD_HEAD,
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    return lines + [_fold_row(fold) for fold in leave_one_out(result, candidates, rules)]


def _family_section(
    result: ReplayReport,
    candidates: Sequence[str],
    rules: Rules,
    families: Mapping[str, Sequence[str]],
) -> list[str]:
    groups = by_family(result.by_source, families)
    named = "; ".join(f"{f}: {', '.join(members)}" for f, members in groups.items())
    lines = [
        "Sources recording the same agent are one family, held out at once (here: "
        + named
        + "; a source in no family is its own). For each family, a candidate is picked using"
        " only the sources of the other families, by the same rules: "
        + _rules_text(rules, "source of the other families")
        + " Then its figures on each source of the family held out, one row per source (none"
        " of them seen while choosing); " + _holds_text(rules),
        "",
    ]
    folds = leave_one_family_out(result, candidates, rules, families)
    if not folds:
        return [*lines, "All sources here are of one family: none can be held out."]
    lines += ["| family " + _FOLD_HEAD, "|---" * 11 + "|"]
    return lines + [f"| {fold.family} {_fold_row(fold)}" for fold in folds]


def _fold_row(fold: Fold) -> str:
    held = fold.held
    holds = "yes" if not held.broken else "no: " + "; ".join(held.broken)
    cells = [
        fold.held_out,
        str(held.refs),
        f"`{fold.pick}`",
        str(fold.eligible),
        f"{fold.tuned.billed:.3f}",
        _worst(fold.tuned),
        f"{held.billed:.3f}",
        f"{held.tokens:.3f}",
        f"{held.recall:.3f}",
        holds,
    ]
    return "| " + " | ".join(cells) + " |"


def _worst(f: Figures) -> str:
    if f.worst_recall is None:
        return "-"
    return f"{f.worst_recall:.3f} ({f.worst_recall_source})"


# -- command -------------------------------------------------------------------------------------


def candidates_from(names: Sequence[str], plugins: Sequence[str]) -> list[str]:
    """The named candidates, then each plugin's ``GRID`` (in order, without repeats)."""
    out = [n for n in names if n != BASELINE]
    for module in plugins:
        out += [n for n in getattr(importlib.import_module(module), "GRID", ()) if n != BASELINE]
    return list(dict.fromkeys(out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_dir = HERE.parent.parent / "shared" / "data" / "trajectories"
    parser.add_argument("trajectories", nargs="?", type=Path, default=default_dir)
    parser.add_argument("-c", "--candidate", action="append", default=[], dest="candidates")
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE")
    parser.add_argument("-j", "--jobs", type=int, default=None)
    parser.add_argument("--cache", type=Path, default=HERE / "loso_cache.json")
    parser.add_argument("--out", type=Path, default=HERE / "loso.md")
    parser.add_argument("--floor", type=float, default=Rules.floor)
    parser.add_argument("--pooled-floor", type=float, default=Rules.pooled_floor)
    parser.add_argument("--min-refs", type=int, default=Rules.min_refs)
    parser.add_argument("--keep-within", type=float, default=Rules.keep_within)
    parser.add_argument(
        "--keep",
        choices=KEEP,
        default=Rules.keep,
        help="when in doubt keep what the worst source keeps, or what every source keeps",
    )
    parser.add_argument(
        "--by",
        choices=BY,
        default="both",
        help="hold out one source at a time, one agent family at a time, or both (two tables)",
    )
    args = parser.parse_args(argv)
    rules = Rules(
        floor=args.floor,
        pooled_floor=args.pooled_floor,
        min_refs=args.min_refs,
        keep_within=args.keep_within,
        keep=args.keep,
    )
    strategies.load_plugins(args.plugin)
    candidates = candidates_from(args.candidates, args.plugin)
    if not candidates:
        parser.error("name at least one candidate (-c NAME) or a plugin with a GRID")
    for name in candidates:
        strategies.get(name)  # unknown names fail before any replay
    paths = sorted(p for p in args.trajectories.rglob("*.json") if p.name != "index.json")
    trajectories = [load_trajectory(p) for p in paths]
    start = time.perf_counter()
    result, replayed = replay_cached(
        trajectories,
        [BASELINE, *candidates],
        cache=args.cache,
        plugins=args.plugin,
        jobs=args.jobs,
    )
    seconds = time.perf_counter() - start
    timing = (
        f"{seconds:.0f} s; {replayed} of {len(candidates) + 1} strategies replayed, the others"
        " taken from replays of the same code and data cached by an earlier run"
    )
    command = "python -m benchmarks.loso " + " ".join(sys.argv[1:] if argv is None else argv)
    text = markdown(result, candidates, rules, command.strip(), timing, by=args.by)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    return 1 if result.errors() else 0


if __name__ == "__main__":
    sys.exit(main())
