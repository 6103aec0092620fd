"""Present a :class:`~tokenlean.replay._runner.ReplayReport`: a table, JSON, and a chart
(:mod:`._chart` draws it; here it is written as SVG, PNG or an HTML page).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tokenlean.replay._chart import chart_svg
from tokenlean.replay._metrics import RunMetrics, relative
from tokenlean.replay._png import png
from tokenlean.replay._runner import ReplayReport
from tokenlean.replay._strategies import BASELINE

__all__ = [
    "COLUMNS",
    "MIN_REFS",
    "SOURCE_COLUMNS",
    "WorstSource",
    "by_source_section",
    "from_json",
    "markdown_table",
    "rows",
    "source_matrix",
    "source_rows",
    "source_table",
    "summary_lines",
    "text_table",
    "to_json",
    "worst_source_lines",
    "worst_sources",
    "write_chart",
    "write_json",
]

COLUMNS = (
    "strategy",
    "calls",
    "tokens sent",
    "billed (Anthropic)",
    "billed (OpenAI)",
    "whole bill (A)",
    "whole bill (O)",
    "prefix breaks",
    "ref. recall",
    "mw ms/call",
)


def rows(report: ReplayReport) -> list[list[str]]:
    """One row per strategy, ratios against the baseline of the same run."""
    base = _baseline(report.pooled)
    price = report.output_price
    return [[name, *_cells(row, base, price)] for name, row in report.pooled.items()]


def _baseline(rows_: dict[str, RunMetrics]) -> RunMetrics:
    return rows_.get(BASELINE) or next(iter(rows_.values()))


def _cells(row: RunMetrics, base: RunMetrics, output_price: float | None = None) -> list[str]:
    """The figures of ``COLUMNS`` after the strategy name."""
    ratio = relative(row, base, output_price=output_price)
    return [
        str(row.calls),
        f"{row.tokens_sent:,} ({ratio['tokens_sent']:.3f})",
        f"{ratio['billed_anthropic']:.3f}",
        f"{ratio['billed_openai']:.3f}",
        f"{ratio['whole_anthropic']:.3f}",
        f"{ratio['whole_openai']:.3f}",
        str(row.prefix_breaks),
        f"{row.recall:.3f}",
        f"{row.middleware_ms_per_call:.2f}",
    ]


def markdown_table(report: ReplayReport) -> str:
    return _markdown(COLUMNS, rows(report))


def text_table(report: ReplayReport) -> str:
    return _text(COLUMNS, rows(report))


def _markdown(columns: Sequence[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def _text(columns: Sequence[str], body: list[list[str]], *, left: int = 1) -> str:
    """Aligned columns; the first ``left`` columns are names (left-aligned)."""
    table = [list(columns), *body]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    lines = [
        "  ".join(
            c.ljust(w) if i < left else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in table
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# -- per source ------------------------------------------------------------------------------------

#: Recall is judged only on sources with at least this many references (fewer is noise).
MIN_REFS = 100

SOURCE_COLUMNS = ("source", COLUMNS[0], "runs", *COLUMNS[1:-2], "ref. recall", "refs", "mw ms/call")


def source_rows(report: ReplayReport) -> list[list[str]]:
    """One row per (source, strategy); ratios against ``none`` of the same source and run."""
    out = []
    for source, by_name in report.by_source.items():
        base = _baseline(by_name)
        for name, row in by_name.items():
            cells = _cells(row, base, report.output_price)
            runs = _ok_runs(report, name, source)
            out.append(
                [source or "-", name, str(runs), *cells[:-1], str(row.refs_total), cells[-1]]
            )
    return out


def _ok_runs(report: ReplayReport, strategy: str, source: str) -> int:
    return sum(
        1 for r in report.runs if r.strategy == strategy and r.source == source and not r.error
    )


def source_table(report: ReplayReport, *, markdown: bool = False, label: str = "source") -> str:
    """The per-source rows; ``label`` names what the runs were grouped by (a session, say)."""
    body = source_rows(report)
    columns = (label, *SOURCE_COLUMNS[1:])
    return _markdown(columns, body) if markdown else _text(columns, body, left=2)


def source_matrix(report: ReplayReport) -> str:
    """A Markdown table: a row per strategy, a column per source (then pooled), each cell
    ``billed (Anthropic) x none / recall``; the compact view for judging by the worst source."""
    sources = list(report.by_source)
    head = ["strategy", *(s or "-" for s in sources), "pooled"]
    body = []
    for name in report.strategies:
        cells = [name]
        cells += [_cell(rows_[name], _baseline(rows_)) for rows_ in report.by_source.values()]
        cells.append(_cell(report.pooled[name], _baseline(report.pooled)))
        body.append(cells)
    return _markdown(head, body)


def _cell(row: RunMetrics, base: RunMetrics) -> str:
    return f"{relative(row, base)['billed_anthropic']:.3f} / {row.recall:.3f}"


@dataclass(frozen=True, slots=True)
class WorstSource:
    """A strategy's worst source by bill and by recall (None when no source qualifies)."""

    strategy: str
    billed_source: str
    billed_anthropic: float  # x none of that source
    recall_source: str | None
    recall: float | None
    recall_sources: int  # sources with >= min_refs references, the ones recall is judged on


def worst_sources(report: ReplayReport, *, min_refs: int = MIN_REFS) -> dict[str, WorstSource]:
    """Per strategy: the source with the highest billed ratio and the one with the lowest recall.

    A source counts for recall when its baseline row (else the strategy's own) holds at least
    ``min_refs`` references, so every strategy is judged on the same sources.
    """
    out: dict[str, WorstSource] = {}
    for name in report.strategies:
        billed: list[tuple[float, str]] = []
        recall: list[tuple[float, str]] = []
        for source, by_name in report.by_source.items():
            row, base = by_name[name], _baseline(by_name)
            if not row.calls:
                continue
            billed.append((relative(row, base)["billed_anthropic"], source))
            if (base.refs_total if base.calls else row.refs_total) >= min_refs:
                recall.append((row.recall, source))
        if not billed:
            continue
        top = max(billed, key=lambda b: (b[0], b[1]))
        low = min(recall) if recall else None
        out[name] = WorstSource(
            name, top[1], top[0], low[1] if low else None, low[0] if low else None, len(recall)
        )
    return out


def worst_source_lines(report: ReplayReport, *, min_refs: int = MIN_REFS) -> list[str]:
    """One line per strategy naming its worst source by bill and by recall."""
    lines = []
    for name, worst in worst_sources(report, min_refs=min_refs).items():
        if name == BASELINE:
            continue
        line = (
            f"worst source for {name}: billed {worst.billed_anthropic:.3f} on {worst.billed_source}"
        )
        if worst.recall_source is not None and worst.recall is not None:
            line += (
                f"; recall {worst.recall:.3f} on {worst.recall_source}"
                f" (of {worst.recall_sources} sources with >= {min_refs} refs)"
            )
        else:
            line += f"; no source with >= {min_refs} refs"
        lines.append(line)
    return lines


def by_source_section(report: ReplayReport, *, markdown: bool = False) -> str:
    """The per-source table and the worst-source lines, ready to print."""
    lines = worst_source_lines(report)
    if markdown:
        lines = [f"- {line}" for line in lines]
    return source_table(report, markdown=markdown) + "\n\n" + "\n".join(lines)


def to_json(report: ReplayReport) -> dict[str, Any]:
    base = report.pooled.get(BASELINE)
    pooled = []
    for row in report.pooled.values():
        entry = row.to_dict()
        if base is not None:
            entry["relative"] = {k: round(v, 5) for k, v in relative(row, base).items()}
        pooled.append(entry)
    return {
        "counter": report.counter,
        "pooled": pooled,
        "by_source": _source_json(report),
        "worst_source": {n: asdict(w) for n, w in worst_sources(report).items()},
        # each call's (prompt, cached, output) tokens: what prices a run under any pricing
        "runs": [
            {**r.to_dict(), "call_tokens": [list(c) for c in r.call_tokens]} for r in report.runs
        ],
    }


def _source_json(report: ReplayReport) -> list[dict[str, Any]]:
    out = []
    for by_name in report.by_source.values():
        base = by_name.get(BASELINE)
        for row in by_name.values():
            entry = row.to_dict()
            if base is not None:
                entry["relative"] = {k: round(v, 5) for k, v in relative(row, base).items()}
            out.append(entry)
    return out


def from_json(data: Mapping[str, Any]) -> ReplayReport:
    """Rebuild a report from :func:`to_json`'s output (its runs; every pooled row is re-derived),
    so a saved replay can be re-tabled or combined without replaying again."""
    runs = [_run_from_dict(entry) for entry in data["runs"]]
    names = [str(entry["strategy"]) for entry in data["pooled"]]
    return ReplayReport(names, runs, str(data["counter"]))


def _run_from_dict(entry: Mapping[str, Any]) -> RunMetrics:
    run = RunMetrics(strategy=str(entry["strategy"]), trajectory=str(entry["trajectory"]))
    run.source = str(entry.get("source") or "")
    for key in ("calls", "tokens_sent", "prefix_breaks", "refs_total", "refs_retained"):
        setattr(run, key, int(entry[key]))
    run.output_tokens = int(entry.get("output_tokens", 0))  # absent in reports made before it
    run.billed_anthropic = float(entry["billed_anthropic"])
    run.billed_openai = float(entry["billed_openai"])
    run.break_positions = [(int(a), int(b)) for a, b in entry["break_positions"]]
    if "middleware_seconds" in entry:
        run.middleware_seconds = float(entry["middleware_seconds"])
    else:  # reports made before it keep the rounded ms per call only
        run.middleware_seconds = float(entry["middleware_ms_per_call"]) * run.calls / 1000
    run.wall_seconds = float(entry["wall_seconds"])
    run.extra_calls = int(entry["extra_calls"])
    run.error = entry.get("error")
    run.call_tokens = [(int(p), int(c), int(o)) for p, c, o in entry.get("call_tokens", ())]
    return run


def write_json(report: ReplayReport, path: Path) -> None:
    path.write_text(json.dumps(to_json(report), indent=2) + "\n", encoding="utf-8")


def write_chart(report: ReplayReport, path: Path) -> None:
    """Write the chart as ``.svg``, ``.png`` (the ``chart`` extra draws it) or, for any other
    suffix, as an HTML page holding the SVG."""
    svg = chart_svg(report)
    if path.suffix.lower() == ".svg":
        path.write_text(svg + "\n", encoding="utf-8")
        return
    if path.suffix.lower() == ".png":
        path.write_bytes(png(svg))
        return
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>tokenlean replay</title></head>"
        f"<body>{svg}<pre>{html.escape(text_table(report))}</pre></body></html>\n"
    )
    path.write_text(page, encoding="utf-8")


def summary_lines(report: ReplayReport) -> list[str]:
    """Notes under the table: the counter used and any failed runs."""
    lines = [f"tokens counted with: {report.counter}"]
    base = report.pooled.get(BASELINE)
    if base is not None and base.calls:
        per_call = 1000 * base.wall_seconds / base.calls
        lines.append(
            f"agent loop without middleware: {per_call:.2f} ms per call "
            "(graph, scripted model and replay tools)"
        )
    failures: list[RunMetrics] = report.errors()
    for run in failures[:10]:
        lines.append(f"FAILED {run.strategy} on {run.trajectory}: {run.error}")
    if len(failures) > 10:
        lines.append(f"... and {len(failures) - 10} more failures")
    return lines
