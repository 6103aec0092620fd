"""Ranking the lines of logs, test output and plain text for the line engine."""

from __future__ import annotations

from collections.abc import Collection, Container, Iterable, Sequence

from tokenlean.shorten.classify import classify, value_lines
from tokenlean.shorten.lines import EDGE, MUST, NEAR, REST, Selection
from tokenlean.shorten.options import ShortenOptions
from tokenlean.shorten.query import matching_lines
from tokenlean.shorten.report import Kind, Reason
from tokenlean.shorten.similar import seen_runs, shapes, similar_runs
from tokenlean.shorten.text import Lines, line_cost

_MIN_CARETS = 3
_DOC_SIGNALS = 0.1  # a document may mention errors on this share of its lines and stay one


def log_selection(
    lines: Lines,
    terms: Sequence[str],
    seen: Container[str] | None,
    options: ShortenOptions,
    *,
    script: bool = False,
    collapse: bool = True,
    document: bool = False,
) -> tuple[Selection, Kind]:
    """Tiers for a log: errors, summaries, key traceback frames and query matches are kept.

    With ``script`` (the output of a script the agent wrote and ran) lines reporting values go
    right after them; without ``collapse`` similar lines never merge (a listing of paths). A
    ``document`` (markdown, prose) with few error lines and no traceback stays ``"text"``.
    Frames that repeat an earlier traceback's frames line for line go, with a pointer to them.
    """
    marks = classify(lines)
    query = matching_lines(lines, terms)
    must = marks.errors | marks.summaries | marks.key_frames | query | _ends(lines.items)
    must |= marks.diff_heads | marks.flags
    must |= {marks.ties[i] for i in marks.key_frames if i in marks.ties}
    must -= (marks.other_frames | marks.project_frames) - marks.errors - query
    near = _around(marks.errors | query, options.context_lines, lines.count)
    near |= marks.warnings | marks.project_frames | marks.diff_changes
    values = value_lines(lines) if script else set()
    must |= _first_within(lines.items, values, options.script_max_tokens)
    near |= values
    # a script's values differ in their digits only: similar-line collapse would drop them
    protected = marks.errors | marks.summaries | query | marks.flags | values
    forced = dropped_lines(
        lines,
        protected,
        seen,
        options,
        keep_seen=marks.errors | marks.summaries,
        collapse=collapse,
        copies=marks.repeats.keys(),
    )
    if len(marks.carets) >= _MIN_CARETS:  # fewer cost less than the note saying they went
        for i in marks.carets:
            forced[i] = "caret"
    must -= marks.repeats.keys()
    tiers = [REST] * lines.count
    _assign(tiers, edge_lines(lines.count, options), EDGE)
    _assign(tiers, near, NEAR)
    _assign(tiers, must, MUST)
    signals = marks.errors | marks.summaries | marks.warnings
    kind: Kind = "log" if signals or marks.ties else "text"
    if document and not marks.ties and len(signals) <= _DOC_SIGNALS * lines.count:
        kind = "text"
    if marks.diff_changes and marks.diff_lines >= 0.5 * lines.count:
        kind = "diff"
    selection = Selection(tiers, distances(must, lines.count), forced, marks.ties, marks.repeats)
    return selection, kind


def dropped_lines(
    lines: Lines,
    protected: Collection[int],
    seen: Container[str] | None,
    options: ShortenOptions,
    *,
    keep_seen: Collection[int],
    collapse: bool = True,
    filler: Collection[int] = (),
    copies: Collection[int] = (),
) -> dict[int, Reason]:
    """Lines left out whatever the budget: ``copies`` (lines of a repeated traceback), inner
    lines of similar runs (unless ``collapse`` is off; the lines between copies count as
    adjacent, so ``job 3 failed:`` lines around copies collapse too), and runs of lines the
    reader was already shown (``keep_seen`` lines are never treated as shown; ``filler`` lines
    never end such a run, and go with it)."""
    forced: dict[int, Reason] = dict.fromkeys(copies, "trace")
    if collapse:
        order = [i for i in range(lines.count) if i not in forced] if forced else None
        items = lines.items if order is None else [lines.items[i] for i in order]
        shaped = shapes(lines.text)
        if order is not None:
            shaped = [shaped[i] for i in order]
            protected = {k for k, i in enumerate(order) if i in protected}
        for run in similar_runs(items, shaped, protected, options.similar_run):
            exact = all(items[k] == items[run.start] for k in run.drop)
            for k in run.drop:
                forced[k if order is None else order[k]] = "repeat" if exact else "similar"
    if seen is not None:
        runs = seen_runs(
            lines.items,
            seen,
            keep_seen,
            min_run=options.seen_run,
            min_chars=options.seen_min_chars,
            filler=filler,
        )
        for run in runs:
            for i in run.drop:
                # a filler line the reader was not shown goes with the stretch, but its
                # marker must not claim it was shown
                line = lines.items[i].strip()
                forced[i] = "seen" if len(line) <= 3 or line in seen else "budget"
    return forced


def _first_within(items: Sequence[str], indices: Collection[int], budget: float) -> set[int]:
    """The first of ``indices`` (in order) whose lines together cost at most ``budget``."""
    out: set[int] = set()
    spent = 0.0
    for i in sorted(indices):
        spent += line_cost(items[i])
        if spent > budget:
            break
        out.add(i)
    return out


def edge_lines(n: int, options: ShortenOptions) -> set[int]:
    return set(range(min(options.head_lines, n))) | set(range(max(0, n - options.tail_lines), n))


def _ends(items: Sequence[str]) -> set[int]:
    """The first and last non-blank lines."""
    filled = [i for i in (0, 1, 2) if i < len(items) and items[i].strip()]
    tail = [i for i in range(len(items) - 1, max(-1, len(items) - 4), -1) if items[i].strip()]
    return set(filled[:1] + tail[:1])


def _around(indices: Iterable[int], width: int, n: int) -> set[int]:
    out: set[int] = set()
    for i in indices:
        out.update(range(max(0, i - width), min(n, i + width + 1)))
    return out


def _assign(tiers: list[int], indices: Iterable[int], tier: int) -> None:
    for i in indices:
        tiers[i] = min(tiers[i], tier)


def distances(anchors: Collection[int], n: int) -> list[int]:
    """Each line's distance to the nearest anchor line (``n`` when there is none)."""
    dist = [n] * n
    last = None
    for i in range(n):
        if i in anchors:
            last = i
        if last is not None:
            dist[i] = i - last
    last = None
    for i in range(n - 1, -1, -1):
        if i in anchors:
            last = i
        if last is not None:
            dist[i] = min(dist[i], last - i)
    return dist
