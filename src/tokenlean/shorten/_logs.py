"""Ranking the lines of logs, test output and plain text for the line engine."""

from __future__ import annotations

from collections.abc import Callable, Collection, Container, Sequence
from itertools import chain, compress, filterfalse

from tokenlean.shorten._classify import LogMarks, value_lines
from tokenlean.shorten._options import ShortenSettings
from tokenlean.shorten._query import matching_lines
from tokenlean.shorten._report import Kind, Reason
from tokenlean.shorten._selection import (
    EDGE,
    MUST,
    NEAR,
    REST,
    Selection,
    around,
    assign,
    distances,
    ends,
)
from tokenlean.shorten._similar import seen_runs, shapes, shown_lines, similar_runs
from tokenlean.shorten._text import Lines, line_cost

__all__ = ["dropped_lines", "log_kind", "log_selection"]

_MIN_CARETS = 3
_DOC_SIGNALS = 0.1  # a document may mention errors on this share of its lines and stay one


def log_kind(
    lines: Lines, marks: LogMarks, *, document: Callable[[], bool] = lambda: False
) -> Kind:
    """What the log with these ``marks`` is: ``"log"`` when it reports errors, summaries,
    warnings or tracebacks, ``"diff"`` when it is mostly one, else ``"text"``. A ``document``
    (markdown, prose) with few error lines and no traceback stays ``"text"``; ``document`` is
    asked only then (most logs have a traceback or many error lines)."""
    signals = marks.errors | marks.summaries | marks.warnings
    kind: Kind = "log" if signals or marks.ties else "text"
    if not marks.ties and len(signals) <= _DOC_SIGNALS * lines.total and document():
        kind = "text"
    if marks.diff_changes and marks.diff_lines >= 0.5 * lines.count:
        kind = "diff"
    return kind


def log_selection(
    lines: Lines,
    marks: LogMarks,
    terms: Sequence[str],
    seen: Container[str] | None,
    options: ShortenSettings,
    *,
    script: bool = False,
    collapse: bool = True,
) -> Selection:
    """Tiers for a log (``marks``: its :func:`classify`): errors, summaries, key traceback
    frames and query matches are kept.

    With ``script`` (the output of a script the agent wrote and ran) lines reporting values go
    right after them; without ``collapse`` similar lines never merge (a listing of paths).
    Frames that repeat an earlier traceback's frames line for line go, with a pointer to them.
    """
    query = matching_lines(lines, terms)
    must = marks.errors | marks.summaries | marks.key_frames | query | ends(lines.items)
    must |= marks.diff_heads | marks.flags
    must |= {marks.ties[i] for i in marks.key_frames if i in marks.ties}
    must -= (marks.other_frames | marks.project_frames) - marks.errors - query
    near = around(marks.errors | query, options.context_lines, lines.count)
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
    assign(tiers, edge_lines(lines.count, options), EDGE)
    assign(tiers, near, NEAR)
    assign(tiers, must, MUST)
    return Selection(tiers, distances(must, lines.count), forced, marks.ties, marks.repeats)


def dropped_lines(
    lines: Lines,
    protected: Collection[int],
    seen: Container[str] | None,
    options: ShortenSettings,
    *,
    keep_seen: Collection[int],
    collapse: bool = True,
    filler: Collection[int] = (),
    copies: Collection[int] = (),
    content: list[str] | None = None,
) -> dict[int, Reason]:
    """Lines left out whatever the budget: ``copies`` (lines of a repeated traceback), inner
    lines of similar runs (unless ``collapse`` is off; the lines between copies count as
    adjacent, so ``job 3 failed:`` lines around copies collapse too), and runs of lines the
    reader was already shown (``keep_seen`` lines are never treated as shown; ``filler`` lines
    never end such a run, and go with it). ``content``: what each line holds for that match (a
    file view's lines without their numbers, so a file read again after an edit above, its
    numbers shifted, still points to what it repeats)."""
    # Per-line steps are C-level passes: a run can hold most of a million-line output.
    forced: dict[int, Reason] = dict.fromkeys(copies, "trace")
    if collapse:
        _collapse_similar(lines, protected, options, forced)
    if seen is not None:
        runs = seen_runs(
            lines.items if content is None else content,
            seen,
            keep_seen,
            min_run=options.seen_run,
            min_chars=options.seen_min_chars,
            filler=filler,
        )
        # a view matched by content keeps each run's first and last line when their numbers
        # are new: they say where the unchanged stretch now sits (agents cite and edit by them)
        drops = (run.drop if content is None else _numbered(run.drop, lines, seen) for run in runs)
        dropped = list(chain.from_iterable(drops))
        forced.update(dict.fromkeys(dropped, "seen"))
        if filler:
            _unshown_filler(lines.items, dropped, filler, seen, forced)
    return forced


def _numbered(drop: tuple[int, ...], lines: Lines, seen: Container[str]) -> tuple[int, ...]:
    """``drop`` less its first and last line where the view shows them under new numbers."""
    kept = {i for i in (drop[0], drop[-1]) if lines.items[i].strip() not in seen} if drop else ()
    return tuple(i for i in drop if i not in kept)


def _collapse_similar(
    lines: Lines, protected: Collection[int], options: ShortenSettings, forced: dict[int, Reason]
) -> None:
    """Force out the inner lines of similar runs among the lines not yet ``forced``."""
    items, shaped = lines.items, shapes(lines.text, lines.items)
    order: list[int] | None = None
    if forced:  # the lines left count as adjacent
        order = list(filterfalse(forced.__contains__, range(lines.count)))
        items = list(map(items.__getitem__, order))
        shaped = list(map(shaped.__getitem__, order))
        protected = set(compress(range(len(order)), map(protected.__contains__, order)))
    for run in similar_runs(items, shaped, protected, options.similar_run):
        exact = items[run.start : run.end].count(items[run.start]) == run.end - run.start
        drop = run.drop if order is None else map(order.__getitem__, run.drop)
        forced.update(dict.fromkeys(drop, "repeat" if exact else "similar"))


def _unshown_filler(
    items: Sequence[str],
    dropped: list[int],
    filler: Collection[int],
    seen: Container[str],
    forced: dict[int, Reason],
) -> None:
    """A filler line the reader was not shown goes with its stretch, but its marker must not
    claim it was shown: such lines are marked ``"budget"``. Every other line of a run was shown
    or is at most three characters long; ``seen`` is asked once per distinct filler line."""
    loose = list(compress(dropped, map(filler.__contains__, dropped)))
    stripped = list(map(str.strip, map(items.__getitem__, loose)))
    shown = shown_lines(stripped, seen)
    for i, line in zip(loose, stripped, strict=True):
        if len(line) > 3 and line not in shown:
            forced[i] = "budget"


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


def edge_lines(n: int, options: ShortenSettings) -> set[int]:
    return set(range(min(options.head_lines, n))) | set(range(max(0, n - options.tail_lines), n))
