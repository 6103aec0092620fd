"""The line engine's side of :func:`~tokenlean.shorten.shorten`: which lines of a text to keep.

A text that is no JSON record, no envelope and no line of printed records is read line by line:
a view, a source file, a page, a log, a document or a listing, each kept on purpose, and the
lines it leaves out are rendered as omission markers. :class:`Reading` holds what one call of
``shorten`` fixed for every text it shortens (the envelopes and parts of one output too).
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, replace
from functools import cache
from typing import Literal

from tokenlean.shorten._classify import classify
from tokenlean.shorten._code import code_selection, looks_like_code
from tokenlean.shorten._detect import (
    is_listing,
    looks_like_document,
    looks_like_page,
    numbered_view,
    strip_view,
)
from tokenlean.shorten._docs import doc_selection
from tokenlean.shorten._focus import Focus
from tokenlean.shorten._huge import Excerpt, windowed
from tokenlean.shorten._lines import render
from tokenlean.shorten._logs import dropped_lines, log_kind, log_selection
from tokenlean.shorten._markers import Retrieval, line_marker
from tokenlean.shorten._options import ShortenSettings
from tokenlean.shorten._pages import page_selection
from tokenlean.shorten._reads import FileRead
from tokenlean.shorten._records import Tables, find_tables, mostly_records
from tokenlean.shorten._report import Kind, Omission, Reason
from tokenlean.shorten._seen import view_keys
from tokenlean.shorten._selection import MUST, Selection
from tokenlean.shorten._text import Lines, line_cost

__all__ = ["KindChoice", "Reading", "shorten_lines"]

KindChoice = Literal["auto", "log", "code", "json", "text"]
#: What an omission marker costs, about (a budget that leaves stretches out pays for them).
_MARKER_COST = line_cost(line_marker("budget", 99, 100, 199, Retrieval(), hinted=True))


@dataclass(frozen=True, slots=True)
class Reading:
    """What one ``shorten`` call fixed for every text it shortens: the ``kind`` asked for, the
    query's ``terms``, ``script`` (the call ran a script the agent wrote), the lines already
    ``seen``, the ``retrieval`` markers name and the options; and what the call asked for.

    ``read``: the call printed a file, or a stretch of one
    (:func:`~tokenlean.shorten._reads.file_read`); ``paging``: that stretch was asked for by at
    least ``page_lines`` lines; ``answer``: another model wrote it for the agent
    (:func:`~tokenlean.shorten._calls.asks_an_agent`); ``record``: the call fetched it by its
    identifier (:func:`~tokenlean.shorten._calls.fetches_a_record`); ``focus``: the line a
    viewer was moved to, or the lines an edit wrote (:mod:`tokenlean.shorten._focus`);
    ``files``: how many whole files the call printed; ``hits``: a search or extract tool's
    answer to the query the call posed (:func:`~tokenlean.shorten._asks.answers_a_query`),
    source code among them kept as asked, not outlined; ``parted``: the text is what a script
    printed, after a header about the run, and may be several things in a row
    (:mod:`tokenlean.shorten._layout`), each shortened by its own kind.
    """

    kind: KindChoice
    terms: list[str]
    script: bool
    seen: Container[str] | None
    retrieval: Retrieval
    opts: ShortenSettings
    read: FileRead | None = None
    paging: bool = False
    answer: bool = False
    record: bool = False
    focus: Focus | None = None
    files: int = 1
    parted: bool = False
    hits: bool = False


def shorten_lines(
    body: str, reading: Reading, budget: float, line_offset: int
) -> tuple[str, Kind, list[Omission]]:
    """``body`` read line by line (cut to windows first when it is huge), its lines chosen by
    what it is, and rendered with a marker for each stretch left out."""
    cut = windowed(body, reading.terms, reading.opts)
    lines = cut or Lines(body)
    size = lines.tokens()
    kind = reading.kind
    prefixes = numbered_view(lines.items) if kind in ("auto", "code", "text") else None
    items = strip_view(lines.items, prefixes) if prefixes else lines.items
    page = kind == "auto" and prefixes is None and looks_like_page(items)
    code = kind == "code" or (kind == "auto" and not page and looks_like_code(items))
    selection, found, budget = _select(
        lines, items, reading, budget, size, prefixes=prefixes, page=page, code=code
    )
    selection = _forced_out(selection, lines, reading, cut, view=prefixes is not None)
    long_line = reading.opts.long_line_chars
    if selection.whole and not (cut and cut.holes):  # kept whole: so are its long lines
        long_line = max(long_line, *map(len, lines.items))
    text, omissions = render(
        lines,
        selection,
        budget=budget,
        retrieval=reading.retrieval,
        terms=reading.terms,
        long_line_chars=long_line,
        line_offset=line_offset,
    )
    return text, found, omissions


def _select(
    lines: Lines,
    items: list[str],
    reading: Reading,
    budget: float,
    size: int,
    *,
    prefixes: list[int] | None,
    page: bool,
    code: bool,
) -> tuple[Selection, Kind, float]:
    """The lines to keep, the kind found and the budget for them: a text the agent asked for
    whole up to its limit, else source code's outline, a page's elements, a log's or a
    document's lines (``prefixes``: a file view's line numbers)."""
    opts, seen = reading.opts, reading.seen
    # the agent asked for exactly these lines (a view, a stretch it printed, a document it
    # printed; a whole source file keeps its outline and the parts the query names, which on
    # the dev coding sources kept what agents used, and so does a page of one read through)
    # and edits them next, or another model's answer, written for it: only repeats go
    paged = code and reading.paging and prefixes is None
    read = reading.read
    asked = prefixes is not None or (read == "range" and not paged) or (read == "file" and not code)
    asked = asked or reading.answer or (reading.hits and code)
    # a view repeats what an earlier view showed of the file, whatever its numbers now
    content = view_keys(items) if prefixes else None
    limit = _whole_up_to(opts, read=read, code=code, files=reading.files)
    if asked and size <= limit:
        return _whole(lines, seen, opts, content=content), "code" if code else "text", budget
    if code:
        terms = reading.terms
        selection = code_selection(lines, terms, seen, opts, view=content, view_tokens=limit)
        floor = limit if prefixes is not None else 0
        return selection, "code", _code_budget(budget, size, opts, floor=floor)
    if page:
        if size <= opts.text_keep_tokens:
            return _whole(lines, seen, opts), "page", budget
        selection, extra = page_selection(lines, reading.terms, seen, opts)
        return selection, "page", budget + extra
    return _text_or_log(lines, items, reading, budget, size, view=prefixes is not None)


def _forced_out(
    selection: Selection, lines: Lines, reading: Reading, cut: Excerpt | None, *, view: bool
) -> Selection:
    """``selection`` with the lines that always go: those of a file ``view`` outside the window
    a tool chose around the focus, and the stretches between a huge text's windows."""
    if reading.focus is not None and view:
        far: dict[int, Reason] = dict.fromkeys(
            reading.focus.outside(lines.items, reading.opts.view_context_lines), "budget"
        )
        selection = replace(selection, forced={**far, **selection.forced})
    if cut is not None:
        selection = replace(
            selection, forced={**selection.forced, **dict.fromkeys(cut.gaps, "budget")}
        )
    return selection


def _text_or_log(
    lines: Lines, items: list[str], reading: Reading, budget: float, size: int, *, view: bool
) -> tuple[Selection, Kind, float]:
    """Logs keep errors and summaries within the budget (a diff fetched by its id stays whole
    up to ``view_keep_tokens``); documents, listings and plain text stay whole up to
    ``text_keep_tokens`` (a record fetched by its id, up to ``view_keep_tokens``: a document the
    agent asked for) and keep a share of themselves beyond it."""
    kind, opts, seen = reading.kind, reading.opts, reading.seen
    listing = kind == "auto" and not view and is_listing(items)
    collapse = not listing or lines.total > opts.listing_keep_lines
    if kind == "log" or (kind == "auto" and not view and not listing):
        logged = _log(lines, items, reading, budget, size, collapse=collapse)
        if logged is not None:
            return logged
    found: Kind = "listing" if listing else "text"
    keep = opts.listing_keep_tokens if listing else opts.text_keep_tokens
    if size <= (max(keep, opts.view_keep_tokens) if reading.record else keep):
        return _whole(lines, seen, opts, collapse=collapse), found, budget
    tables = _record_tables(items) if not listing else Tables()
    selection = doc_selection(
        lines, items, reading.terms, seen, opts, collapse=collapse, tables=tables
    )
    share = opts.text_keep_percent / 100 * size
    if tables.rest:  # rows past a table's head: as many as a JSON array of them would keep
        share = max(float(keep), min(share, _without(lines, tables.rest, size)))
    return selection, found, max(budget, share, float(opts.text_keep_tokens) if view else 0.0)


def _log(
    lines: Lines, items: list[str], reading: Reading, budget: float, size: int, *, collapse: bool
) -> tuple[Selection, Kind, float] | None:
    """A log's, a diff's or a script's result's selection and budget; ``None`` when the text
    turns out to be none of them (most text is not)."""
    kind, opts, script = reading.kind, reading.opts, reading.script
    # whether it reads as a document: found once, and only when asked (a log with a traceback
    # or many error lines never is)
    document = cache(lambda: kind == "auto" and looks_like_document(items))
    marks = classify(lines)
    found = log_kind(lines, marks, document=document)
    if found == "diff" and reading.record and size <= opts.view_keep_tokens:
        # a change fetched by its id (gh pr diff 45) is what the agent reviews: not the
        # agent's own edits (git diff), which are cut as a log
        return _whole(lines, reading.seen, opts), found, budget
    # a script's own result: a table of data it printed is read as a document's rows
    result = script and not document() and not mostly_records(items)
    if not (kind == "log" or found in ("log", "diff") or result):
        return None
    # a log's selection only once it is known to be one (most text is not)
    selection = log_selection(
        lines, marks, reading.terms, reading.seen, opts, script=script, collapse=collapse
    )
    if found == "diff":
        budget = _code_budget(budget, size, opts)
    elif script:
        budget = max(budget, opts.script_max_tokens)
    return selection, found, budget


def _without(lines: Lines, rest: frozenset[int], size: int) -> float:
    """What ``lines`` (``size`` tokens) cost without the lines ``rest``, a marker for each
    stretch of them included."""
    stretches = sum(1 for i in rest if i - 1 not in rest)
    gone = sum(map(line_cost, map(lines.items.__getitem__, rest)))
    return size - gone + stretches * _MARKER_COST


def _record_tables(items: list[str]) -> Tables:
    """The tables of a text made mostly of them (a query's rows, a CSV); of a document with
    tables in its prose (a converted web page), only their rows holding a rare value."""
    tables = find_tables(items)
    if 2 * len(tables.rows) >= len(items) - items.count(""):
        return tables
    return Tables(rare=tables.rare)


def _whole(
    lines: Lines,
    seen: Container[str] | None,
    opts: ShortenSettings,
    *,
    collapse: bool = False,
    content: list[str] | None = None,
) -> Selection:
    """Everything kept, but runs of lines already shown (and, with ``collapse``, similar runs);
    ``content``: a view's lines without their numbers, matched against what was shown."""
    forced = dropped_lines(lines, (), seen, opts, keep_seen=(), collapse=collapse, content=content)
    return Selection([MUST] * lines.count, [0] * lines.count, forced, {}, whole=True)


def _code_budget(budget: float, size: int, opts: ShortenSettings, *, floor: int = 0) -> float:
    """Source code and diffs: the reader asked for exactly these lines, so cut less; a long file
    view keeps at least ``floor`` (what it would have kept whole)."""
    share = opts.code_keep_percent / 100 * size
    return max(budget + opts.code_max_tokens - opts.max_tokens, share, float(floor))


def _whole_up_to(opts: ShortenSettings, *, read: FileRead | None, code: bool, files: int) -> int:
    """Up to how many tokens a text the agent asked for stays whole: a whole source file,
    ``file_keep_tokens`` (it goes on to use a few scattered lines of it), each of ``files``
    printed together; a stretch it asked for, a view, a document, ``view_keep_tokens``."""
    if read != "file" or not code:
        return opts.view_keep_tokens
    if files <= 1:
        return opts.file_keep_tokens
    return max(opts.file_keep_tokens, min(opts.view_keep_tokens, files * opts.file_keep_tokens))
