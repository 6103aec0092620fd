"""Why shortening loses references, and why it bills more than no middleware on some sources.

Usage (from the repository root)::

    tokenlean replay TRAJECTORY_DIR -s none -s shorten ... -j 2 --json REPLAY.json
    python -m benchmarks.diagnose_recall TRAJECTORY_DIR --replay REPLAY.json [-j 2]

The per-source figures come from ``REPLAY.json``. Then every trajectory is replayed again,
in-process, with no middleware and with each other strategy of that file, while the first-sight
planner's calls to ``shorten`` are recorded (observed, not changed). For each reference the
agent wrote but could no longer see (as in ``tokenlean.replay._metrics``), it finds the tool
output the reference was learned from (its first appearance), what the prompt held in its place
(shortened, cleared by the context editor, unchanged) and, when shortened, the content kind the
shortener assigned and the omission that covers the reference's line (budget, similar-line
collapse, pointer to lines already shown, JSON items or string cut, long-line cut, ...).

It also splits each run's change in tokens and billed input against no middleware into: the
tool schemas (the ``read_original`` tool), the omission markers and pointers added to shortened
results, what the shortening cut, and everything else (other middleware, cache effects), each
summed over the calls that sent it. Writes ``benchmarks/diagnosis_data.json`` (every lost
reference, every shortened result, every run's split) and ``benchmarks/diagnosis_details.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tokenlean.langchain._adapter import to_view
from tokenlean.replay import _report as report
from tokenlean.replay import _strategies as strategies
from tokenlean.replay._engine import Replay, replay, turn_messages
from tokenlean.replay._formats import Trajectory, load_trajectory
from tokenlean.replay._metrics import Prompt, PromptMeasurer, relative
from tokenlean.replay._refs import extract_refs, learned_references, message_refs
from tokenlean.replay._runner import ReplayReport, shared_measurer
from tokenlean.shorten._report import ShortenReport
from tokenlean.shorten._wrapped import readable
from tokenlean.tokens import tool_schema_text
from tokenlean.transcript import Message

HERE = Path(__file__).parent
CACHED, UNCACHED = 0.1, 1.25  # Anthropic-style prices of a cached and an uncached input token

# -- observing the shortener --------------------------------------------------------------------

#: tool_call_id -> the last ShortenReport the first-sight planner got for that result.
_REPORTS: dict[str, ShortenReport] = {}
_CURRENT: list[str] = [""]


def observe_shortener() -> None:
    """Record every report the first-sight planner receives (idempotent, this process only)."""
    from tokenlean.shorten import _firstsight as firstsight

    if getattr(firstsight, "_diagnose_observed", False):
        return
    plan_one, shorten = firstsight._shorten_one, getattr(firstsight, "shorten")  # noqa: B009

    def planning(message: Message, *args: Any, **kwargs: Any) -> Any:
        _CURRENT[0] = message.tool_call_id or ""
        return plan_one(message, *args, **kwargs)

    def shortening(text: str, **kwargs: Any) -> ShortenReport:
        result: ShortenReport = shorten(text, **kwargs)
        _REPORTS[_CURRENT[0]] = result
        return result

    # Both are looked up as module globals at call time, so replacing them observes every call.
    setattr(firstsight, "_shorten_one", planning)  # noqa: B010  # a wrapper with the same signature
    setattr(firstsight, "shorten", shortening)  # noqa: B010
    setattr(firstsight, "_diagnose_observed", True)  # noqa: B010


# -- what one replay lost -----------------------------------------------------------------------


@dataclass
class Lost:
    """A reference the agent wrote that its prompt no longer showed."""

    source: str
    trajectory: str
    strategy: str
    call: int
    ref: str
    tool: str
    state: str  # shortened | cleared | unchanged | absent
    kind: str  # the shortener's content kind ("" when not shortened)
    reason: str  # the omission covering the reference's line, or why none does
    tokens_before: int
    tokens_after: int
    line: str  # the original line holding the reference (trimmed)
    detail: str  # the covering omission, e.g. "budget lines 40-120"
    copies: int  # other messages of the original prompt holding the reference
    args: str = ""  # the arguments of the tool call that produced the output (trimmed)


@dataclass
class Shortened:
    """One tool result the planner shortened (or tried to: ``changed`` False)."""

    source: str
    trajectory: str
    strategy: str
    tool: str
    kind: str
    tokens_before: int
    tokens_after: int
    changed: bool
    reasons: list[str]


@dataclass
class Split:
    """A run's change against no middleware, split by cause (tokens and Anthropic billed)."""

    source: str
    trajectory: str
    strategy: str
    calls: int = 0
    schema_tokens: int = 0
    schema_billed: float = 0.0
    marker_tokens: int = 0
    marker_billed: float = 0.0
    cut_tokens: int = 0
    cut_billed: float = 0.0
    other_tokens: int = 0
    other_billed: float = 0.0
    none_tokens: int = 0
    none_billed: float = 0.0
    results_shortened: int = 0


@dataclass
class RunDiagnosis:
    lost: list[Lost] = field(default_factory=list)
    shortened: list[Shortened] = field(default_factory=list)
    splits: list[Split] = field(default_factory=list)


def diagnose(path: Path, names: Sequence[str], plugins: Sequence[str] = ()) -> RunDiagnosis:
    """Replay ``path`` with none and each of ``names``; what each lost and what it added."""
    strategies.load_plugins(plugins)
    observe_shortener()
    trajectory = load_trajectory(path)
    measurer = shared_measurer()
    base = _prompts(replay(trajectory, []), measurer)
    out = RunDiagnosis()
    for name in names:
        _REPORTS.clear()
        result = replay(trajectory, strategies.get(name).factory())
        prompts = _prompts(result, measurer)
        out.lost += _lost(trajectory, name, result, prompts)
        out.shortened += _shortened(trajectory, name, result)
        out.splits.append(_split(trajectory, name, base, prompts, measurer))
    return out


@dataclass
class _Call:
    response_id: str
    prompt: Prompt
    messages: list[Any]  # the LangChain messages as sent
    view: list[Message]


def _prompts(result: Replay, measurer: PromptMeasurer) -> list[_Call]:
    calls = []
    for call in result.calls:
        if not call.scripted or call.response is None:
            continue
        view = to_view(call.messages)
        prompt = measurer.measure(tool_schema_text(call.tools), view)
        calls.append(_Call(str(call.response.id), prompt, call.messages, view))
    return calls


def _lost(trajectory: Trajectory, name: str, result: Replay, calls: list[_Call]) -> list[Lost]:
    messages = trajectory.messages
    refs_of = [message_refs(m) for m in messages]
    first: dict[str, int] = {}
    for index, refs in enumerate(refs_of):
        for ref in refs:
            first.setdefault(ref, index)
    turns = {
        str(ai.id): turn
        for ai, turn in zip(turn_messages(messages), learned_references(messages), strict=True)
    }
    tool_calls = {c.id: c for m in messages for c in m.tool_calls}
    out = []
    for number, call in enumerate(calls):
        turn = turns.get(call.response_id)
        if turn is None:
            continue
        for ref in sorted(turn.refs - call.prompt.refs):
            at = first[ref]
            origin = messages[at]
            copies = sum(1 for i in range(turn.message_index) if i != at and ref in refs_of[i])
            made = tool_calls.get(origin.tool_call_id or "")
            tool = origin.name or (made.name if made else "?")
            lost = _explain(trajectory, name, number, ref, origin, tool, call, copies)
            lost.args = json.dumps(made.args, ensure_ascii=False)[:200] if made else ""
            out.append(lost)
    return out


def _explain(
    trajectory: Trajectory,
    name: str,
    number: int,
    ref: str,
    origin: Message,
    tool: str,
    call: _Call,
    copies: int,
) -> Lost:
    sent = next(
        (m for m in call.messages if getattr(m, "tool_call_id", None) == origin.tool_call_id),
        None,
    )
    text = readable(origin.text)  # the lines the markers count (inside a JSON envelope)
    line_no, line = _line_of(text, ref)
    lost = Lost(
        trajectory.source_name, trajectory.id, name, number, ref, tool, "absent", "", "",
        0, 0, _trim(line, ref), "", copies,
    )  # fmt: skip
    if sent is None:
        return lost
    meta = getattr(sent, "response_metadata", {}) or {}
    if "context_editing" in meta:
        lost.state, lost.reason = "cleared", "context editor"
        return lost
    shortened = _REPORTS.get(origin.tool_call_id or "")
    if not isinstance(meta.get("tokenlean"), dict) or shortened is None:
        lost.state, lost.reason = "unchanged", "visible origin"
        return lost
    lost.state, lost.kind = "shortened", shortened.kind
    lost.tokens_before, lost.tokens_after = shortened.tokens_before, shortened.tokens_after
    lost.reason, lost.detail = _covering(shortened, text, ref, line_no)
    return lost


def _line_of(text: str, ref: str) -> tuple[int, str]:
    """The first 1-based line whose references include ``ref`` (else holding it as text)."""
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if ref in line and ref in extract_refs(line):
            return number, line
    for number, line in enumerate(lines, start=1):
        if ref in line:
            return number, line
    return 0, ""


def _trim(line: str, ref: str, width: int = 150) -> str:
    line = line.strip()
    if len(line) <= width:
        return line
    at = max(0, line.find(ref) - width // 3)
    return ("..." if at else "") + line[at : at + width] + "..."


def _covering(shortened: ShortenReport, text: str, ref: str, line_no: int) -> tuple[str, str]:
    """The omission that removed ``ref``'s line, as (reason, detail)."""
    for o in shortened.omissions:
        if o.first_line and o.first_line <= line_no <= o.last_line:
            span = f"lines {o.first_line}-{o.last_line}" if o.unit == "lines" else o.unit
            return o.reason, f"{o.reason}: {o.count} {span} of {text.count(chr(10)) + 1}"
    reasons = sorted({o.reason for o in shortened.omissions})
    if shortened.kind == "json":
        return "json " + "+".join(reasons), f"json crushed ({', '.join(reasons)})"
    return "uncovered", f"no omission covers line {line_no} ({', '.join(reasons)})"


def _shortened(trajectory: Trajectory, name: str, result: Replay) -> list[Shortened]:
    tool_names = {c.id: c.name for m in trajectory.messages for c in m.tool_calls}
    return [
        Shortened(
            source=trajectory.source_name,
            trajectory=trajectory.id,
            strategy=name,
            tool=tool_names.get(call_id, "?"),
            kind=rep.kind,
            tokens_before=rep.tokens_before,
            tokens_after=rep.tokens_after,
            changed=rep.changed,
            reasons=sorted({o.reason for o in rep.omissions}),
        )
        for call_id, rep in _REPORTS.items()
    ]


# -- what a strategy added and cut --------------------------------------------------------------

_MARKERS = re.compile(
    r"\[\.\.\. [^\[\]\n]*? omitted[^\[\]\n]*?\.\.\.\]"  # line, inline and note markers
    r"|\.\.\. \d+ similar items? omitted \((?:indices|index) [^)]*\)[^\n]*? \.\.\."  # JSON items
    r"|\.\.\. \[\d+ chars omitted[^\]\n]*\]"  # JSON strings
    r"|\[\.\.\. the whole string: [^\]\n]*\]"  # JSON strings shortened as documents
)


def marker_tokens(text: str, measurer: PromptMeasurer) -> int:
    """Tokens of the omission markers and pointers in ``text``."""
    return sum(measurer.counter.count(m.group()) for m in _MARKERS.finditer(text))


def _weights(calls: list[_Call]) -> list[list[float]]:
    """Per call and block, the Anthropic price of a token of that block (cached or not)."""
    out, previous = [], None
    for call in calls:
        blocks = call.prompt.blocks
        same = 0
        if previous is not None:
            for a, b in zip(previous, blocks, strict=False):
                if a != b:
                    break
                same += 1
        out.append([CACHED if i < same else UNCACHED for i in range(len(blocks))])
        previous = blocks
    return out


def _keys(view: list[Message]) -> list[str]:
    """A key per prompt message, stable between replays (LangGraph ids of inputs are not)."""
    counts: Counter[str] = Counter()
    keys = []
    for m in view:
        if m.role == "tool":
            keys.append(f"tool:{m.tool_call_id}")
        elif m.role == "assistant" and m.id:
            keys.append(f"ai:{m.id}")
        else:
            counts[m.role] += 1
            keys.append(f"{m.role}:{counts[m.role]}")
    return keys


def _split(
    trajectory: Trajectory,
    name: str,
    base: list[_Call],
    calls: list[_Call],
    measurer: PromptMeasurer,
) -> Split:
    split = Split(trajectory.source_name, trajectory.id, name)
    base_by_id = {c.response_id: (c, w) for c, w in zip(base, _weights(base), strict=True)}
    shortened: set[str] = set()
    for call, weights in zip(calls, _weights(calls), strict=True):
        matched = base_by_id.get(call.response_id)
        if matched is None:
            continue
        none, none_w = matched
        split.calls += 1
        split.none_tokens += none.prompt.total
        split.none_billed += sum(t * w for t, w in zip(none.prompt.tokens, none_w, strict=True))
        total_t = call.prompt.total - none.prompt.total
        total_b = sum(t * w for t, w in zip(call.prompt.tokens, weights, strict=True)) - sum(
            t * w for t, w in zip(none.prompt.tokens, none_w, strict=True)
        )
        schema_t = call.prompt.tokens[0] - none.prompt.tokens[0]
        schema_b = call.prompt.tokens[0] * weights[0] - none.prompt.tokens[0] * none_w[0]
        marks_t, marks_b, cut_t, cut_b = _shortened_blocks(
            call, weights, none, none_w, measurer, shortened
        )
        split.schema_tokens += schema_t
        split.schema_billed += schema_b
        split.marker_tokens += marks_t
        split.marker_billed += marks_b
        split.cut_tokens += cut_t
        split.cut_billed += cut_b
        split.other_tokens += total_t - schema_t - marks_t + cut_t
        split.other_billed += total_b - schema_b - marks_b + cut_b
    split.results_shortened = len(shortened)
    return split


def _shortened_blocks(
    call: _Call,
    weights: list[float],
    none: _Call,
    none_w: list[float],
    measurer: PromptMeasurer,
    shortened: set[str],
) -> tuple[int, float, int, float]:
    """Markers added and tokens cut in this call's shortened results (tokens, billed each)."""
    position = {k: i for i, k in enumerate(_keys(none.view))}
    marks_t = cut_t = 0
    marks_b = cut_b = 0.0
    for i, (key, sent) in enumerate(zip(_keys(call.view), call.messages, strict=True)):
        meta = getattr(sent, "response_metadata", {}) or {}
        j = position.get(key)
        if not isinstance(meta.get("tokenlean"), dict) or j is None:
            continue
        shortened.add(key)
        block, w = i + 1, weights[i + 1]  # block 0 is the tool schemas
        marks = marker_tokens(call.view[i].text, measurer)
        kept = call.prompt.tokens[block] - marks
        marks_t += marks
        marks_b += marks * w
        cut_t += none.prompt.tokens[j + 1] - kept
        cut_b += none.prompt.tokens[j + 1] * none_w[j + 1] - kept * w
    return marks_t, marks_b, cut_t, cut_b


# -- the whole data set -------------------------------------------------------------------------


def _work(args: tuple[str, tuple[str, ...], tuple[str, ...]]) -> RunDiagnosis:
    path, names, plugins = args
    return diagnose(Path(path), names, plugins)


def diagnose_all(
    paths: Sequence[Path], names: Sequence[str], jobs: int, plugins: Sequence[str] = ()
) -> RunDiagnosis:
    tasks = [(str(p), tuple(names), tuple(plugins)) for p in paths]
    total = RunDiagnosis()
    if jobs <= 1:
        results: Iterable[RunDiagnosis] = map(_work, tasks)
    else:
        pool = ProcessPoolExecutor(max_workers=jobs)
        results = pool.map(_work, tasks)
    for done, one in enumerate(results, start=1):
        total.lost += one.lost
        total.shortened += one.shortened
        total.splits += one.splits
        print(f"\r{done}/{len(tasks)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return total


def check_against(result: ReplayReport, found: RunDiagnosis) -> list[str]:
    """Runs where the lost references found differ from the replay file's count."""
    lost = Counter((x.trajectory, x.strategy) for x in found.lost)
    problems = []
    for run in result.runs:
        if run.strategy == strategies.BASELINE or run.error:
            continue
        expected = run.refs_total - run.refs_retained
        if lost[run.trajectory, run.strategy] != expected:
            problems.append(
                f"{run.strategy} on {run.trajectory}: replay file {expected},"
                f" found {lost[run.trajectory, run.strategy]}"
            )
    return problems


# -- tables -------------------------------------------------------------------------------------


def figures_table(result: ReplayReport, found: RunDiagnosis) -> str:
    """Per source and strategy: tokens and billed x none, recall, references, lost ones."""
    lost = Counter((x.source, x.strategy) for x in found.lost)
    lines = ["| source | strategy | tokens | billed | recall | refs | lost |"]
    lines.append("|---|---|---|---|---|---|---|")
    for source, rows in result.by_source.items():
        base = rows[strategies.BASELINE]
        for name, row in rows.items():
            ratio = relative(row, base)
            lines.append(
                f"| {source} | {name} | {ratio['tokens_sent']:.3f}"
                f" | {ratio['billed_anthropic']:.3f} | {row.recall:.3f} | {row.refs_total}"
                f" | {lost[source, name]} |"
            )
    return "\n".join(lines)


def causes_table(found: RunDiagnosis) -> str:
    groups: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for x in found.lost:
        groups[x.source, x.strategy][_cause(x)] += 1
    lines = ["| source | strategy | lost | causes (count) |", "|---|---|---|---|"]
    for (source, name), causes in sorted(groups.items()):
        text = "; ".join(f"{c} {n}" for c, n in causes.most_common())
        lines.append(f"| {source} | {name} | {sum(causes.values())} | {text} |")
    return "\n".join(lines)


def _cause(x: Lost) -> str:
    if x.state != "shortened":
        return f"{x.state} ({x.reason})"
    return f"{x.kind}/{x.reason}"


def tools_table(found: RunDiagnosis, strategy: str) -> str:
    """Per source: the tools and kinds the lost references of ``strategy`` came from."""
    groups: dict[str, Counter[str]] = defaultdict(Counter)
    for x in found.lost:
        if x.strategy == strategy:
            groups[x.source][f"{x.tool} ({x.kind or x.state})"] += 1
    lines = ["| source | tool (kind): lost references |", "|---|---|"]
    for source, tools in sorted(groups.items()):
        lines.append(f"| {source} | {'; '.join(f'{t}: {n}' for t, n in tools.most_common(6))} |")
    return "\n".join(lines)


def examples(found: RunDiagnosis, strategy: str, per_cause: int = 3) -> str:
    """Up to ``per_cause`` examples per source and cause (distinct tool outputs)."""
    groups: dict[tuple[str, str], list[Lost]] = defaultdict(list)
    for x in found.lost:
        if x.strategy == strategy:
            groups[x.source, _cause(x)].append(x)
    out = []
    for (source, cause), items in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
        out.append(f"- **{source}**, {cause} ({len(items)} lost)")
        shown: set[tuple[str, str]] = set()
        for x in items:
            if (x.trajectory, x.line) in shown or len(shown) >= per_cause:
                continue
            shown.add((x.trajectory, x.line))
            line = x.line.replace("`", "'")
            out.append(
                f"  - `{x.ref}` from `{x.tool}` ({x.tokens_before}->{x.tokens_after} tokens;"
                f" {x.detail or x.reason}) in {x.trajectory}: `{line}`"
            )
    return "\n".join(out)


def split_table(found: RunDiagnosis) -> str:
    """Per source and strategy: what the schema, markers and cuts did, x none's totals."""
    groups: dict[tuple[str, str], list[Split]] = defaultdict(list)
    for s in found.splits:
        groups[s.source, s.strategy].append(s)
    head = (
        "| source | strategy | results shortened | tokens: schema | markers | cut | other"
        " | net | billed: schema | markers | cut | other | net |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (source, name), items in sorted(groups.items()):
        t0 = sum(s.none_tokens for s in items) or 1
        b0 = sum(s.none_billed for s in items) or 1.0
        st = [sum(getattr(s, f) for s in items) for f in _TOKEN_FIELDS]
        sb = [sum(getattr(s, f) for s in items) for f in _BILLED_FIELDS]
        cells = [f"{st[0] / t0:+.3f}", f"{st[1] / t0:+.3f}", f"{-st[2] / t0:+.3f}",
                 f"{st[3] / t0:+.3f}", f"{(st[0] + st[1] - st[2] + st[3]) / t0:+.3f}",
                 f"{sb[0] / b0:+.3f}", f"{sb[1] / b0:+.3f}", f"{-sb[2] / b0:+.3f}",
                 f"{sb[3] / b0:+.3f}", f"{(sb[0] + sb[1] - sb[2] + sb[3]) / b0:+.3f}"]  # fmt: skip
        shortened = sum(s.results_shortened for s in items)
        lines.append(f"| {source} | {name} | {shortened} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


_TOKEN_FIELDS = ("schema_tokens", "marker_tokens", "cut_tokens", "other_tokens")
_BILLED_FIELDS = ("schema_billed", "marker_billed", "cut_billed", "other_billed")


def kinds_table(found: RunDiagnosis, strategy: str) -> str:
    """Per source: the results ``strategy`` shortened by kind (count, tokens before -> after)."""
    groups: dict[tuple[str, str], list[Shortened]] = defaultdict(list)
    for s in found.shortened:
        if s.strategy == strategy and s.changed:
            groups[s.source, s.kind].append(s)
    lines = ["| source | kind | results | tokens before | after | omission reasons |"]
    lines.append("|---|---|---|---|---|---|")
    for (source, kind), items in sorted(groups.items()):
        reasons = Counter(r for s in items for r in s.reasons)
        lines.append(
            f"| {source} | {kind} | {len(items)} | {sum(s.tokens_before for s in items):,}"
            f" | {sum(s.tokens_after for s in items):,}"
            f" | {', '.join(f'{r} {n}' for r, n in reasons.most_common())} |"
        )
    return "\n".join(lines)


def details(result: ReplayReport, found: RunDiagnosis, names: Sequence[str], command: str) -> str:
    parts = [
        "# Diagnosis details (generated)",
        "",
        f"Produced by `{command}`. Tokens counted with: {result.counter}.",
        "",
        "## Per source (tokens and billed input x none of the same source)",
        "",
        figures_table(result, found),
        "",
        "Billed (Anthropic) x none / recall:",
        "",
        report.source_matrix(result),
        "",
        "## Lost references by cause",
        "",
        "`kind/reason`: the shortener's content kind for the output the reference was learned"
        " from, and the omission covering its line.",
        "",
        causes_table(found),
        "",
        "## Change against none, split (fractions of none's tokens / billed input)",
        "",
        "schema: tool schemas added (read_original); markers: omission markers and pointers in"
        " shortened results; cut: what shortening removed (negative: saved); other: the rest"
        " (other middleware, cache effects). Each summed over every call that sent it.",
        "",
        split_table(found),
    ]
    for name in names:
        parts += [
            "",
            f"## {name}: shortened results by kind",
            "",
            kinds_table(found, name),
            "",
            f"## {name}: tools the lost references came from",
            "",
            tools_table(found, name),
            "",
            f"## {name}: examples",
            "",
            examples(found, name),
        ]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_dir = HERE.parent.parent / "shared" / "data" / "trajectories"
    parser.add_argument("trajectories", nargs="?", type=Path, default=default_dir)
    parser.add_argument("--replay", type=Path, required=True, help="tokenlean replay --json FILE")
    parser.add_argument("-j", "--jobs", type=int, default=1)
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE")
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    strategies.load_plugins(args.plugin)
    result = report.from_json(json.loads(args.replay.read_text()))
    names = [n for n in result.strategies if n != strategies.BASELINE]
    paths = sorted(p for p in args.trajectories.rglob("*.json") if p.name != "index.json")
    found = diagnose_all(paths, names, args.jobs, args.plugin)
    problems = check_against(result, found)
    for line in problems[:20]:
        print(f"MISMATCH {line}", file=sys.stderr)
    command = "python -m benchmarks.diagnose_recall " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    text = details(result, found, names, command.strip())
    if problems:
        text += f"\n{len(problems)} runs where the lost count differs from the replay file.\n"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "diagnosis_details.md").write_text(text, encoding="utf-8")
    data = {k: [asdict(x) for x in getattr(found, k)] for k in ("lost", "shortened", "splits")}
    (args.out / "diagnosis_data.json").write_text(json.dumps(data) + "\n")
    print(text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
