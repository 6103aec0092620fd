"""What each way into tokenlean saves, per source, on the same runs in one run.

Usage (from the repository root)::

    TOKENLEAN_TIKTOKEN_DIR=../shared/tokenizers \\
        python -m benchmarks.adapters [TRAJECTORY_DIR] [-j JOBS] [--limit N]

Every row is an *adapter*: a function that replays one recorded trajectory through that way in
and returns what the model was sent on each call, in the neutral view
(:class:`~tokenlean.replay._raw.CallPrompt`). Each row is measured against its *baseline* (the
same framework with no tokenlean at all) in one body form (Anthropic Messages for the
frameworks, the rewritten API's own for the raw rewrite) with the replay's metrics: billed
input Anthropic- and OpenAI-style (cache-aware), reference recall, prefix breaks, tokens sent.

To add a row, register the way in with the replay (``tokenlean.replay.register_way_in``: a
function from a trajectory to what the model was sent on each call) and name it in
:data:`ADAPTERS` with :func:`way_in`; if it runs in its own framework, add that framework's
no-middleware replay to :data:`BASELINES` and name it as the row's baseline.
Writes ``benchmarks/adapters.md``.
"""

from __future__ import annotations

import argparse
import os
import pickle
import platform
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from benchmarks import _common as common
from benchmarks._common import in_parallel, measurer, select, shortener
from tokenlean.raw import Api
from tokenlean.replay import get_strategy
from tokenlean.replay._formats import Trajectory, load_trajectory
from tokenlean.replay._metrics import RunMetrics, pool
from tokenlean.replay._raw import CallPrompt, call_prompts, measure_prompts, round_trip
from tokenlean.replay.builtin import ways_in
from tokenlean.tokens import default_counter

HERE = Path(__file__).parent
APIS = ways_in.APIS
REFERENCE = "langchain-always"  # the row every other is held against (the acceptance)
TOLERANCE = 0.01


# -- what a row's replay gets: the trajectory and its shared no-middleware replay --------------


@dataclass
class Recorded:
    """One trajectory, and what several rows share about it (each made once, when asked)."""

    trajectory: Trajectory
    originals: Path  # where the raw rewrite's markers point (a fixed path: it costs tokens)

    @cached_property
    def plain(self) -> Sequence[CallPrompt]:
        """The calls of a real ``create_agent`` with no middleware (the replay's, which the
        raw rows read too)."""
        return ways_in.plain(self.trajectory)

    @cached_property
    def schemas(self) -> dict[str, Mapping[str, Any]]:
        """The recorded tools' JSON schemas as the LangChain replay binds them, by name (other
        frameworks get the same, so their baselines send the same tool list)."""
        tools = self.plain[0].tools if self.plain else ()
        return {t["function"]["name"]: t["function"]["parameters"] for t in tools}


Replayer = Callable[[Trajectory, Recorded], Sequence[CallPrompt]]


@dataclass(frozen=True)
class Adapter:
    """A row: its replay, the baseline it is held against, and the body form both are measured
    in (after a round trip through a body of that API, see :func:`measure_prompts`)."""

    replay: Replayer
    baseline: str = "langchain"
    api: Api = "anthropic"
    label: str = ""


# -- LangChain ---------------------------------------------------------------------------------


def langchain_plain(trajectory: Trajectory, recorded: Recorded) -> Sequence[CallPrompt]:
    return recorded.plain


def _langchain(trajectory: Trajectory, middleware: list[Any]) -> list[CallPrompt]:
    from tokenlean.replay._engine import replay

    return call_prompts(trajectory, replay(trajectory, middleware))


def langchain_recommended(trajectory: Trajectory, recorded: Recorded) -> list[CallPrompt]:
    """``recommended_middleware()`` as shipped (Anthropic pricing)."""
    from tokenlean.langchain import recommended_middleware

    return _langchain(trajectory, recommended_middleware("anthropic"))


def langchain_always(trajectory: Trajectory, recorded: Recorded) -> list[CallPrompt]:
    """The recommended stack's shortener offering ``read_original`` from the first call: it
    makes every shortening, the decisions the other adapters make (``raw_savings.md``)."""
    return _langchain(trajectory, shortener("always"))


# -- the other ways in: the replay's registrations (tokenlean.replay.builtin.ways_in) --------


def way_in(name: str) -> Replayer:
    """The replay's registered way in ``name`` (``tokenlean replay -s NAME``), as a row."""

    def replay_way_in(trajectory: Trajectory, recorded: Recorded) -> Sequence[CallPrompt]:
        chosen = get_strategy(name).way_in
        assert chosen is not None, f"{name} is not a way in"  # the table below names only those
        return chosen(trajectory)

    return replay_way_in


def raw(api: Api) -> Replayer:
    """The raw rewrite's registration, its markers naming :attr:`Recorded.originals`."""

    def replay_raw(trajectory: Trajectory, recorded: Recorded) -> Sequence[CallPrompt]:
        return ways_in.raw(api, recorded.originals)(trajectory)

    return replay_raw


def pydantic_plain(trajectory: Trajectory, recorded: Recorded) -> list[CallPrompt]:
    from tokenlean.replay.pydantic_ai import call_prompts

    return call_prompts(trajectory, None)


def agentscope_plain(trajectory: Trajectory, recorded: Recorded) -> list[CallPrompt]:
    from tokenlean.replay.agentscope import call_prompts

    return call_prompts(trajectory, [])


def agentscope_shortener(trajectory: Trajectory, recorded: Recorded) -> list[CallPrompt]:
    """The AgentScope stack's shortener alone: the counterpart of the reference row."""
    from tokenlean.agentscope import ToolOutputShorteningMiddleware
    from tokenlean.replay.agentscope import call_prompts

    return call_prompts(trajectory, [ToolOutputShorteningMiddleware(inputs=True)])


# -- the table of rows -------------------------------------------------------------------------

#: Each framework's no-middleware replay, by name (what a row's ``baseline`` names).
BASELINES: dict[str, Replayer] = {
    "langchain": langchain_plain,
    "pydantic-ai": pydantic_plain,
    "agentscope": agentscope_plain,
}

#: The rows, in the order the tables show them.
ADAPTERS: dict[str, Adapter] = {
    "langchain": Adapter(langchain_recommended, label="LangChain `recommended_middleware()`"),
    REFERENCE: Adapter(langchain_always, label='LangChain shortener, `offer_tool="always"`'),
    **{
        f"raw-{api}": Adapter(raw(api), api=api, label=f"`rewrite_request({api!r})`")
        for api in APIS
    },
    "pydantic-ai": Adapter(way_in("pydantic-ai"), baseline="pydantic-ai", label="pydantic-ai"),
    "agentscope": Adapter(
        way_in("agentscope"),
        baseline="agentscope",
        label="AgentScope `recommended_middleware()`",
    ),
    "agentscope-shortener": Adapter(
        agentscope_shortener, baseline="agentscope", label="AgentScope shortener"
    ),
}


# -- measuring ---------------------------------------------------------------------------------


@dataclass
class Measured:
    """One trajectory's rows: each adapter, each as measured without its own tool schemas
    (``<name> w/o tool``) and each (baseline, body form) pair (``none <baseline> <api>``)."""

    source: str
    rows: dict[str, RunMetrics] = field(default_factory=dict)
    turns: dict[str, tuple[int | None, ...]] = field(default_factory=dict)


def baseline_key(adapter: Adapter) -> str:
    return f"none {adapter.baseline} {adapter.api}"


def measure_one(path: str, originals: str, names: Sequence[str] | None = None) -> Measured:
    """Every row (or those in ``names``) of one trajectory, with the baselines they need."""
    trajectory = load_trajectory(path)
    recorded = Recorded(trajectory, Path(originals))
    out = Measured(trajectory.source_name)
    chosen = {n: ADAPTERS[n] for n in (names or ADAPTERS)}
    plains = {b: BASELINES[b](trajectory, recorded) for b in {a.baseline for a in chosen.values()}}
    for name, adapter in chosen.items():
        base = plains[adapter.baseline]
        prompts = _sent(adapter.api, adapter.replay(trajectory, recorded))
        if baseline_key(adapter) not in out.rows:
            out.rows[baseline_key(adapter)] = _measure(trajectory, _sent(adapter.api, base), "none")
        out.rows[name] = _measure(trajectory, prompts, name)
        out.rows[f"{name} w/o tool"] = _measure(trajectory, prompts, name, base)
        out.turns[name] = tuple(p.turn for p in prompts if p.turn is not None)
    out.turns["none"] = tuple(p.turn for p in recorded.plain if p.turn is not None)
    return out


def _sent(api: Api, prompts: Sequence[CallPrompt]) -> list[CallPrompt]:
    """The calls answered by a recorded turn, each as the model reads its ``api`` body."""
    return [replace(p, messages=round_trip(api, p.messages)) for p in prompts if p.turn is not None]


def _measure(
    trajectory: Trajectory,
    prompts: Sequence[CallPrompt],
    name: str,
    tools_from: Sequence[CallPrompt] | None = None,
) -> RunMetrics:
    if tools_from is not None and _scripted(tools_from) != _scripted(prompts):
        return RunMetrics(strategy=name, trajectory=trajectory.id, error="other calls")
    return measure_prompts(
        trajectory, prompts, measurer(), strategy=name, api=None, tools_from=tools_from
    )


def _scripted(prompts: Sequence[CallPrompt]) -> list[int | None]:
    return [p.turn for p in prompts if p.turn is not None]


def run(paths: Sequence[Path], jobs: int, originals: str) -> list[Measured]:
    return in_parallel(measure_one, paths, jobs, originals)


def pooled(results: Sequence[Measured]) -> dict[str, dict[str, RunMetrics]]:
    """Rows summed by source (then ``(all)``), by row name."""
    groups: dict[str, list[Measured]] = defaultdict(list)
    for m in results:
        groups[m.source].append(m)
    ordered = [*sorted(groups.items()), ("(all)", list(results))]
    names = sorted({name for m in results for name in m.rows})
    return {
        source: {n: pool(n, (m.rows[n] for m in group if n in m.rows)) for n in names}
        for source, group in ordered
    }


def ratio(rows: Mapping[str, RunMetrics], name: str, attr: str) -> float:
    """A row's figure over its baseline's, measured in the same body form."""
    adapter = ADAPTERS[name.removesuffix(" w/o tool")]
    value, base = getattr(rows[name], attr), getattr(rows[baseline_key(adapter)], attr)
    return float(value / base) if base else 1.0


def differences(
    table: Mapping[str, Mapping[str, RunMetrics]],
) -> list[tuple[str, str, float, float]]:
    """(source, row, Anthropic billed ratio − the reference row's, the same without either's
    own tool schemas) for every row held against the reference."""
    out = []
    for source, rows in table.items():
        for name in ADAPTERS:
            if name == REFERENCE or name not in rows:
                continue
            delta = ratio(rows, name, "billed_anthropic") - ratio(
                rows, REFERENCE, "billed_anthropic"
            )
            bare = ratio(rows, f"{name} w/o tool", "billed_anthropic") - ratio(
                rows, f"{REFERENCE} w/o tool", "billed_anthropic"
            )
            out.append((source, name, delta, bare))
    return out


def call_mismatches(results: Sequence[Measured]) -> list[str]:
    """Runs where a row measured other calls than the LangChain replay with no middleware."""
    return [
        f"{m.source}: {name} measured {len(turns)} calls, none {len(m.turns['none'])}"
        for m in results
        for name, turns in m.turns.items()
        if turns != m.turns["none"]
    ]


# -- the report --------------------------------------------------------------------------------

METRICS = (
    ("billed input, Anthropic-style (ratio to no middleware)", "billed_anthropic"),
    ("billed input, OpenAI-style (ratio to no middleware)", "billed_openai"),
    ("tokens sent (ratio to no middleware)", "tokens_sent"),
    ("reference recall", "recall"),
    ("prefix breaks", "prefix_breaks"),
)


def metric_table(
    table: Mapping[str, Mapping[str, RunMetrics]], runs: Mapping[str, int], attr: str
) -> list[str]:
    names = [n for n in ADAPTERS if any(n in rows for rows in table.values())]
    lines = ["| source | runs | calls | " + " | ".join(names) + " |"]
    lines.append("|---|" + "---:|" * (len(names) + 2))
    for source, rows in table.items():
        calls = rows["none langchain anthropic"].calls
        cells = " | ".join(_cell(rows, n, attr) for n in names)
        lines.append(f"| {source} | {runs[source]} | {calls:,} | {cells} |")
    return lines


def _cell(rows: Mapping[str, RunMetrics], name: str, attr: str) -> str:
    if attr == "recall":
        return f"{rows[name].recall:.3f}"
    if attr == "prefix_breaks":
        return str(rows[name].prefix_breaks)
    return f"{ratio(rows, name, attr):.3f}"


def difference_table(diffs: Sequence[tuple[str, str, float, float]]) -> list[str]:
    """Per source, each row's Anthropic billed ratio minus the reference row's (and the same
    with neither's own tool schemas); ``!`` marks a difference over the tolerance."""
    names = list(dict.fromkeys(name for _, name, _, _ in diffs))
    lines = ["| source | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    by_source: dict[str, dict[str, tuple[float, float]]] = defaultdict(dict)
    for source, name, delta, bare in diffs:
        by_source[source][name] = (delta, bare)
    for source, cells in by_source.items():
        shown = [_delta(*cells[n]) if n in cells else "" for n in names]
        lines.append(f"| {source} | " + " | ".join(shown) + " |")
    return lines


def _delta(delta: float, bare: float) -> str:
    flag = " !" if abs(delta) > TOLERANCE else ""
    return f"{delta:+.3f} ({bare:+.3f}){flag}"


def baseline_table(table: Mapping[str, Mapping[str, RunMetrics]]) -> list[str]:
    """Each baseline's Anthropic billed input over LangChain's with no middleware in Anthropic
    bodies: what the framework and the body form alone change (1.000: the same prompts)."""
    keys = sorted({baseline_key(a) for a in ADAPTERS.values()} - {"none langchain anthropic"})
    lines = ["| source | " + " | ".join(k.removeprefix("none ") for k in keys) + " |"]
    lines.append("|---|" + "---:|" * len(keys))
    for source, rows in table.items():
        ref = rows["none langchain anthropic"].billed_anthropic
        cells = [f"{rows[k].billed_anthropic / ref:.3f}" if ref and k in rows else "" for k in keys]
        lines.append(f"| {source} | " + " | ".join(cells) + " |")
    return lines


def flagged(diffs: Sequence[tuple[str, str, float, float]]) -> list[str]:
    """Each difference over the tolerance, with what the bracketed figure says it comes from."""
    return [
        f"{source}: {name} {delta:+.3f} from {REFERENCE}; {_why(name, bare)}"
        for source, name, delta, bare in diffs
        if abs(delta) > TOLERANCE
    ]


def _why(name: str, bare: float) -> str:
    if abs(bare) <= TOLERANCE:
        tool = (
            "joins late: one cache re-write"
            if name == "langchain"
            else "is not sent: markers name files"
            if name.startswith("raw-")
            else "differs"
        )
        return f"{bare:+.3f} without either's tool schemas: the tool list (`read_original` {tool})"
    return f"{bare:+.3f} without either's tool schemas: more than the tool list (see below)"


# -- the command -------------------------------------------------------------------------------


def main(argv: Iterable[str] | None = None) -> int:
    parser = common.parser(__doc__, HERE / "adapters.md")
    parser.add_argument("--results", help="also pickle the measured rows here")
    parser.add_argument("--render", help="write the report from rows pickled by --results")
    parser.add_argument(
        "--originals",
        default=str(Path(tempfile.gettempdir()) / "tokenlean-cache" / "originals"),
        help="where the raw rewrite writes originals (markers name it: its length costs tokens)",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.render:
        results, minutes = pickle.loads(Path(args.render).read_bytes())
    else:
        paths = select(Path(args.directory), args.limit)
        if not paths:
            print(f"no trajectories under {args.directory}", file=sys.stderr)
            return 1
        Path(args.originals).mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        results = run(paths, args.jobs, args.originals)
        minutes = (time.perf_counter() - started) / 60
        if args.results:
            Path(args.results).write_bytes(pickle.dumps((results, minutes)))
    report = Report(results, minutes, args)
    print("\n".join(report.summary()))
    Path(args.output).write_text("\n".join(report.markdown()), encoding="utf-8")
    return 0


@dataclass
class Report:
    results: list[Measured]
    minutes: float
    args: argparse.Namespace

    @cached_property
    def table(self) -> dict[str, dict[str, RunMetrics]]:
        return pooled(self.results)

    @cached_property
    def runs(self) -> dict[str, int]:
        runs: dict[str, int] = defaultdict(int)
        for m in self.results:
            runs[m.source] += 1
            runs["(all)"] += 1
        return runs

    @cached_property
    def diffs(self) -> list[tuple[str, str, float, float]]:
        return differences(self.table)

    def summary(self) -> list[str]:
        lines = [
            "Anthropic billed input:",
            *metric_table(self.table, self.runs, "billed_anthropic"),
        ]
        lines += ["", f"Over {TOLERANCE} from {REFERENCE}:", *(flagged(self.diffs) or ["none"])]
        return [*lines, "", "Rows on other calls:", *(call_mismatches(self.results) or ["none"])]

    def markdown(self) -> list[str]:
        text = [*self._header(), ""]
        for title, attr in METRICS:
            text += [f"## {title}", "", *metric_table(self.table, self.runs, attr), ""]
        text += [
            f"## Anthropic billed ratio minus {REFERENCE}'s",
            "",
            "In brackets: the same with each row measured with its baseline's tool schemas (what",
            f"a row's own `read_original` schema costs is then left out). `!`: over {TOLERANCE}.",
            "",
            *difference_table(self.diffs),
            "",
            f"Over {TOLERANCE}:",
            "",
            *(f"- {line}" for line in flagged(self.diffs) or ["none"]),
            "",
            *EXPLANATION,
            "",
            "## The baselines",
            "",
            "Each row is held against its own framework with no tokenlean, in its own body form;",
            "here each of those baselines is held against LangChain's (Anthropic bodies), billed",
            "Anthropic-style. 1.000 means the same prompts.",
            "",
            *baseline_table(self.table),
            "",
            "Rows that measured other calls than no middleware: "
            + ("; ".join(call_mismatches(self.results)) or "none")
            + ".",
            "",
        ]
        return text

    def _header(self) -> list[str]:
        args, originals = self.args, self.args.originals
        counter = getattr(default_counter(), "encoding_name", None) or "estimate"
        limit = f" --limit {args.limit}" if args.limit else ""
        runs = (
            f"the first {args.limit} runs of each source (file name order)"
            if args.limit
            else "every run"
        )
        return [
            "# Savings per adapter",
            "",
            f"Generated by `python -m benchmarks.adapters{limit} -j {args.jobs}` on "
            f"{time.strftime('%Y-%m-%d')} ({self.minutes:.1f} min; {platform.platform()}, "
            f"{os.cpu_count()} cores shared with other work, Python {platform.python_version()}; "
            f"tokens: {counter}; the raw rewrite's originals in `{originals}`, {len(originals)} "
            f"chars, which its markers name), on {runs} of `{args.directory}`: "
            f"{self.runs['(all)']} runs.",
            "",
            *ROWS_TEXT,
        ]


ROWS_TEXT = [
    "Rows (`benchmarks/adapters.py`, `ADAPTERS`), each replayed on the same runs in one run:",
    "",
    "- *langchain*: `recommended_middleware()` as shipped in a real `create_agent` with a",
    "  scripted model replaying the recorded turns (the replay of `tokenlean.replay`);",
    '- *langchain-always*: its shortener with `offer_tool="always"` (`read_original` from the',
    "  first call, every shortening made): the reference the other rows are held against;",
    "- *raw-&lt;api&gt;*: the no-middleware prompts of each call as that API's request body",
    "  (`tokenlean.raw.bodies`), through `tokenlean.raw.rewrite_request`, read back with",
    "  the API's own reader;",
    "- *pydantic-ai*: `tokenlean.pydantic_ai.history_processor()` in a real pydantic-ai `Agent`",
    "  with `FunctionModel` replaying the recorded turns (`tokenlean.replay.pydantic_ai`), its",
    "  `read_original` tool given to the agent (listed in a run's requests by the one rule);",
    "- *agentscope*: `tokenlean.agentscope.recommended_middleware()` in a real AgentScope",
    "  `Agent` with a scripted `ChatModelBase` replaying the recorded turns",
    "  (`tokenlean.replay.agentscope`); *agentscope-shortener*: that stack's shortener alone.",
    "",
    "*langchain*, *pydantic-ai*, *agentscope* and *raw-&lt;api&gt;* are the replay's own",
    "strategies (`tokenlean replay -s NAME`; `tokenlean.replay.builtin.ways_in`).",
    "",
    "Every row is held against its baseline, the same framework with no tokenlean on the same",
    "runs (LangChain's, pydantic-ai's or AgentScope's, with the same tool schemas), measured in",
    "the same body form after a round trip through it (Anthropic Messages for the frameworks,",
    "the rewritten API's own for *raw-&lt;api&gt;*), with the replay's metrics",
    "(`tokenlean.replay._metrics`):",
    "billed input is cache-aware (the longest run of leading blocks byte-identical to the",
    "previous call's is cached), recall counts learned references still visible, a prefix",
    "break is a call whose previous prompt is not its prefix. Calls the recording has no turn",
    "for (a nudge, the agent's last request after the last recorded turn) are not measured.",
]

EXPLANATION = [
    "Why rows differ from *langchain-always*, where they do:",
    "",
    "- *langchain* (as shipped) differs by its rule for the tool, not by adapter:",
    "  `read_original` is in a thread's tool list from its first call only where its schema",
    "  is a negligible share (1%) of that prompt. The recordings hold short first prompts",
    "  (not the coding agents' own long system prompts), so most threads are not offered it",
    "  then; later it joins only at a call whose cache is cold, or where the thread's savings",
    "  pay for the cache re-write a new tool list causes. Until it joins, only what needs no",
    "  way back is cut: that is most of the difference on the coding sources. The stack's",
    "  loop guard ended runs early on WebShop (11 and 7 of 14 calls were made) and WorkArena",
    "  (12 of 19; *Rows on other calls*), the rest of those sources' difference.",
    "- *raw-&lt;api&gt;* adds no tool (markers name files), so it does not pay for a",
    "  `read_original` schema on every call; on short runs where little is shortened that",
    "  schema is most of the bill (it makes *langchain-always* bill above no middleware on",
    "  WebShop, HotpotQA and tau2), and the bracketed figure, both rows without their tool,",
    "  stays within 0.01 on every source. What remains is the markers' wording: a file path",
    "  and line range, a few tokens longer than a handle. The four body forms read back to",
    "  the same prompts (the baselines below are 1.000); *raw-gemini* differs from the other",
    "  raw rows by a few thousandths (its reader numbers calls, which carry no ids in",
    "  Gemini bodies, by position; not traced further).",
    "- *pydantic-ai* and *agentscope-shortener* list `read_original` by the first of those",
    "  rules (`tokenlean.history.Offer`: from a run's first call where the schema is a",
    "  negligible share of that prompt, else never, as neither can change a tool list",
    "  mid-run) and bill as *langchain* does, within 0.003, on every source but the two where",
    "  its loop guard ended runs early. *agentscope* adds the loop guard and bills as",
    "  *langchain* does on every source, within 0.001.",
]


if __name__ == "__main__":
    raise SystemExit(main())
