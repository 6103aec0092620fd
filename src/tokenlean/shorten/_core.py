"""``shorten``: text in, shorter text and a report out; pure, deterministic, linear time."""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import replace
from typing import Any, Literal

from tokenlean import checks
from tokenlean.shorten._asks import answers_a_query, asks_for_hits, computes_only, files_read
from tokenlean.shorten._calls import (
    FileRead,
    asks_an_agent,
    fetches_a_record,
    file_read,
    requested_lines,
    runs_own_script,
)
from tokenlean.shorten._classify import classify
from tokenlean.shorten._code import code_selection, looks_like_code
from tokenlean.shorten._detect import (
    is_listing,
    looks_like_document,
    looks_like_page,
    numbered_view,
    parse_json,
    split_envelope,
    strip_view,
)
from tokenlean.shorten._docs import doc_selection
from tokenlean.shorten._focus import Focus, focus_of
from tokenlean.shorten._huge import windowed
from tokenlean.shorten._jsonc import MOST_ROWS, crush_json
from tokenlean.shorten._layout import parts, run_header, shorten_parts
from tokenlean.shorten._lines import MUST, Selection, render
from tokenlean.shorten._logs import dropped_lines, log_kind, log_selection
from tokenlean.shorten._markers import Retrieval, line_marker
from tokenlean.shorten._options import DEFAULT_OPTIONS, ShortenSettings
from tokenlean.shorten._pages import page_selection
from tokenlean.shorten._query import query_terms, query_text
from tokenlean.shorten._records import (
    Tables,
    find_tables,
    mostly_records,
    printed_items,
    shorten_printed,
)
from tokenlean.shorten._report import Kind, Omission, Reason, ShortenReport
from tokenlean.shorten._seen import view_keys
from tokenlean.shorten._text import Lines, estimate_tokens, line_cost
from tokenlean.shorten._wrapped import NESTING, unwrap
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter

KindChoice = Literal["auto", "log", "code", "json", "text"]
#: What an omission marker costs, about (a budget that leaves stretches out pays for them).
_MARKER_COST = line_cost(line_marker("budget", 99, 100, 199, Retrieval(), hinted=True))
_KINDS = ("auto", "log", "code", "json", "text")


def shorten(
    text: str,
    *,
    max_tokens: int | None = None,
    query: str | Mapping[str, Any] | None = None,
    context: str | None = None,
    kind: KindChoice = "auto",
    seen: Container[str] | None = None,
    retrieval: Retrieval | None = None,
    counter: TokenCounter | None = None,
    options: ShortenSettings | None = None,
) -> ShortenReport:
    """Shorten ``text``, keeping what a reader of it needs; each content kind on purpose.

    - Logs and test output keep errors, tracebacks, exit codes, summaries and lines matching
      ``query`` (text, or a tool call's arguments) within about ``max_tokens``; similar lines
      collapse, and a traceback repeated line for line becomes a pointer to the first copy.
      The output of a script the agent wrote (``python reproduce.py``) keeps its value lines.
    - JSON stays valid JSON. Records up to ``json_keep_tokens`` stay whole; larger ones lose
      the middle of long uniform arrays (items with errors, rare statuses or query matches
      stay; the marker names the identifiers dropped) and the bodies of long strings (a
      markdown string is shortened as a document).
    - File views with line numbers (``grep -n``, a Read tool's range, SWE-agent's ``open``)
      stay whole up to ``view_keep_tokens``; longer ones keep the region the query names. So
      do a stretch of a file a command printed as it is (``sed -n '1,200p' f``, ``head f``)
      and a whole file that is not source code (``cat spec.md``), and another model's answer
      to the call (a sub-agent's report, ``WebFetch``'s answer about a page). A whole source
      file read with its line numbers (a Read tool given a path alone, ``cat -n f``) stays
      whole up to ``file_keep_tokens``. A window the tool chose around a line the call named
      (SWE-agent's ``open f 1474``) or around the text an edit wrote keeps
      ``view_context_lines`` on each side of it (:mod:`tokenlean.shorten._focus`).
    - Source code keeps its outline (whole signatures, imports and re-exports) and the parts
      the query is about.
    - Plain text, documents and listings (search results, lookups, articles, ``find``) stay
      whole up to ``text_keep_tokens``; longer documents keep headings (and labels over
      indented blocks: a disassembly's functions), table rows, conclusions and query lines,
      ``text_keep_percent`` of themselves.
    - A query's rows, printed on one line (``str(cursor.fetchall())``) or as a delimited table
      (``psql``, ``sqlite3``, CSV), keep what a JSON array of them would: the first rows as
      far as the budget holds, the rows holding a rare value or a query term, the last.
    - Accessibility trees and HTML pages keep every element the agent can act on.
    - An output wrapped in JSON (Codex's ``{"output": ..., "metadata": ...}``, an MCP result's
      ``content``, a harness's ``stdout``; a short header before it is fine) is shortened by the
      kind of the text inside, and the rest of the envelope stays as it was
      (:mod:`tokenlean.shorten._wrapped`); markers count the lines of the text inside.
    - A text over ``window_above_chars`` (a 50 MB log) is first cut to windows: its first and
      last lines and those around its first and last errors and query matches
      (:mod:`tokenlean.shorten._huge`), so the cost stays bounded; markers count the whole text.

    ``context`` is prose about what the reader looks for (an agent's note when it made the
    call): its code-like words join the query. ``seen`` holds the stripped lines the reader was
    already shown: runs of them are replaced by a pointer instead of being repeated. Every
    omission is marked in the text, with ``retrieval`` saying how to get it back (the first
    marker names the call; later ones only their lines). The result is never longer than
    ``text``; when nothing can be saved it is ``text``.
    """
    _check_arguments(text, query, context, seen, retrieval, counter, options)
    opts = options or DEFAULT_OPTIONS
    if max_tokens is not None:
        opts = replace(opts, max_tokens=max_tokens)
    if not isinstance(kind, str) or kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    count = (counter or DEFAULT_COUNTER).count
    before = count(text)
    if before <= opts.max_tokens and seen is None and text.count("\n") < opts.similar_run:
        return ShortenReport(text, "text" if kind == "auto" else kind, before, before)
    envelope, parted = run_header(split_envelope(text))
    terms = query_terms(query, limit=opts.max_query_terms)
    if context:
        extra = query_terms(context, limit=opts.max_query_terms, code_only=True)
        terms += [term for term in extra if term not in terms]
    where = retrieval or Retrieval()
    budget = opts.max_tokens - estimate_tokens(envelope.head + envelope.tail)
    script = runs_own_script(query)
    asked = asks_for_hits(query) or (parted and computes_only(query))
    read = file_read(query) or ("range" if asked else None)
    span = requested_lines(query) if read == "range" else None
    body, found, omissions = _shorten_body(
        envelope.body,
        kind,
        terms,
        script,
        seen,
        where,
        opts,
        budget,
        envelope.body_line,
        read=read,
        paging=span is not None and span >= opts.page_lines,
        answer=asks_an_agent(query),
        hits=answers_a_query(query),
        record=fetches_a_record(query),
        focus=focus_of(query),
        files=files_read(query) if read == "file" else 1,
        parted=parted,
    )
    new_text = envelope.head + body + envelope.tail
    after = count(new_text) if omissions else before
    if not omissions or after >= before or len(new_text) >= len(text):
        return ShortenReport(text, found, before, before)
    return ShortenReport(new_text, found, before, after, tuple(omissions))


def _check_arguments(
    text: object,
    query: object,
    context: object,
    seen: object,
    retrieval: object,
    counter: object,
    options: object,
) -> None:
    """Refuse arguments of the wrong kind, naming each (``max_tokens`` and ``kind`` are checked
    where they are used)."""
    checks.text(text, "text")
    query_text(query)  # type: ignore[arg-type]  # refuses a query of any other kind
    if context is not None:
        checks.text(context, "context")
    if seen is not None and (not isinstance(seen, Container) or isinstance(seen, (str, bytes))):
        raise checks.ArgumentTypeError(
            f"seen must be a set of lines already shown, got {checks.described(seen)}"
        )
    if retrieval is not None and not isinstance(retrieval, Retrieval):
        raise checks.ArgumentTypeError(
            f"retrieval must be a Retrieval(handle, tool), got {checks.described(retrieval)}"
        )
    if counter is not None:
        checks.token_counter(counter, "counter")
    if options is not None and not isinstance(options, ShortenSettings):
        raise checks.ArgumentTypeError(
            f"options must be a ShortenSettings, got {checks.described(options)}"
        )


def _shorten_body(
    body: str,
    kind: KindChoice,
    terms: list[str],
    script: bool,
    seen: Container[str] | None,
    retrieval: Retrieval,
    opts: ShortenSettings,
    budget: float,
    line_offset: int,
    depth: int = 0,
    *,
    read: FileRead | None = None,
    paging: bool = False,
    answer: bool = False,
    record: bool = False,
    focus: Focus | None = None,
    files: int = 1,
    parted: bool = False,
    hits: bool = False,
) -> tuple[str, Kind, list[Omission]]:
    """Sizes here are the shortener's own fast :func:`estimate_tokens` (how much of a budget a
    part takes: many parts are sized per text); ``depth``: the JSON envelopes ``body`` was taken
    out of; ``read``: the call printed a file, or a stretch of one
    (:func:`~tokenlean.shorten._calls.file_read`); ``paging``: that stretch was asked for by at
    least ``page_lines`` lines; ``answer``: another model wrote it for the agent
    (:func:`~tokenlean.shorten._calls.asks_an_agent`); ``record``: the call fetched it by its
    identifier (:func:`~tokenlean.shorten._calls.fetches_a_record`); ``focus``: the line a
    viewer was moved to, or the lines an edit wrote (:mod:`tokenlean.shorten._focus`);
    ``files``: how many whole files the call printed; ``hits``: a search or extract tool's
    answer to the query the call posed (:func:`~tokenlean.shorten._calls.answers_a_query`),
    source code among them kept as asked, not outlined; ``parted``: ``body`` is what a script
    printed, after a header about the run, and may be several things in a row
    (:mod:`tokenlean.shorten._layout`), each shortened by its own kind."""
    ok, parsed = parse_json(body) if kind in ("auto", "json") else (False, None)
    wrapped = None
    if kind != "json" and depth < NESTING:
        wrapped = unwrap(body, [parsed]) if ok else unwrap(body)
    if wrapped is not None:  # the text inside, as if it came alone; the envelope kept
        inner, inner_kind, omissions = _shorten_body(
            wrapped.body,
            kind,
            terms,
            script,
            seen,
            retrieval,
            opts,
            budget,
            line_offset + wrapped.body_line,
            depth=depth + 1,
            read=read,
            paging=paging,
            answer=answer,
            record=record,
            focus=focus,
            files=files,
            hits=hits,
        )
        return (wrapped.wrap(inner) if omissions else body), inner_kind, omissions
    if kind in ("auto", "json"):
        if ok:
            size = estimate_tokens(body)
            # a record asked for, another model's answer, a JSON file the agent printed, the
            # result of a script it ran (what it ran the script for)
            asked = answer or record or script or read is not None
            if asked and size <= opts.view_keep_tokens:
                return body, "json", []
            return _shorten_json(body, parsed, terms, retrieval, opts, size)
        if kind == "json":
            return body, "json", []
    if parted and depth < NESTING and (ranges := parts(body)) is not None:

        def part(text: str, share: float, first: int) -> tuple[str, Kind, list[Omission]]:
            return _shorten_body(
                text, kind, terms, script, seen, retrieval, opts, share, line_offset + first,
                depth + 1, read=read, paging=paging, answer=answer, record=record, files=files,
                hits=hits,
            )  # fmt: skip

        return shorten_parts(body, ranges, budget, part)
    if kind in ("auto", "text") and read is None and not (answer or record):
        printed = _printed_body(body, terms, retrieval, opts, line_offset)
        if printed is not None:
            return printed
    cut = windowed(body, terms, opts)
    lines = cut or Lines(body)
    size = estimate_tokens(lines.text)
    prefixes = numbered_view(lines.items) if kind in ("auto", "code", "text") else None
    items = strip_view(lines.items, prefixes) if prefixes else lines.items
    page = kind == "auto" and prefixes is None and looks_like_page(items)
    code = kind == "code" or (kind == "auto" and not page and looks_like_code(items))
    found: Kind
    # the agent asked for exactly these lines (a view, a stretch it printed, a document it
    # printed; a whole source file keeps its outline and the parts the query names, which on
    # the dev coding sources kept what agents used, and so does a page of one read through)
    # and edits them next, or another model's answer, written for it: only repeats go
    paged = code and paging and prefixes is None
    asked = prefixes is not None or (read == "range" and not paged) or (read == "file" and not code)
    asked = asked or answer or (hits and code)
    # a view repeats what an earlier view showed of the file, whatever its numbers now
    content = view_keys(items) if prefixes else None
    limit = _whole_up_to(opts, read=read, code=code, files=files)
    if asked and size <= limit:
        selection, found = _whole(lines, seen, opts, content=content), "code" if code else "text"
    elif code:
        selection = code_selection(lines, terms, seen, opts, view=content, view_tokens=limit)
        found = "code"
        budget = _code_budget(budget, size, opts, floor=limit if prefixes is not None else 0)
    elif page:
        if size <= opts.text_keep_tokens:
            selection = _whole(lines, seen, opts)
        else:
            selection, extra = page_selection(lines, terms, seen, opts)
            budget += extra
        found = "page"
    else:
        selection, found, budget = _text_or_log(
            lines,
            items,
            kind,
            terms,
            script,
            seen,
            opts,
            budget,
            size,
            view=prefixes is not None,
            record=record,
        )
    if focus is not None and prefixes is not None:  # a window the tool chose around the focus
        far: dict[int, Reason] = dict.fromkeys(
            focus.outside(lines.items, opts.view_context_lines), "budget"
        )
        selection = replace(selection, forced={**far, **selection.forced})
    if cut is not None:  # the stretches between its windows always go
        selection = replace(
            selection, forced={**selection.forced, **dict.fromkeys(cut.gaps, "budget")}
        )
    long_line = opts.long_line_chars
    if selection.whole and not (cut and cut.holes):  # kept whole: so are its long lines
        long_line = max(long_line, *map(len, lines.items))
    text, omissions = render(
        lines,
        selection,
        budget=budget,
        retrieval=retrieval,
        terms=terms,
        long_line_chars=long_line,
        line_offset=line_offset,
    )
    return text, found, omissions


def _printed_body(
    body: str, terms: list[str], retrieval: Retrieval, opts: ShortenSettings, line_offset: int
) -> tuple[str, Kind, list[Omission]] | None:
    """A list of records printed on one line (``str(cursor.fetchall())``), shortened item by
    item (:mod:`tokenlean.shorten._records`) within what plain text keeps; ``None`` when
    ``body`` is no such line."""
    stripped = body.strip()
    if "\n" in stripped or len(body) > opts.window_above_chars:
        return None
    size = estimate_tokens(body)
    if size <= opts.text_keep_tokens:
        return None  # the line engine keeps it whole
    printed = printed_items(body)
    if printed is None:
        return None
    text, omissions = shorten_printed(
        body,
        printed,
        budget=max(float(opts.text_keep_tokens), opts.text_keep_percent / 100 * size),
        estimate=estimate_tokens,
        terms=terms,
        retrieval=retrieval,
        number=line_offset + body[: len(body) - len(body.lstrip())].count("\n") + 1,
    )
    return text, "text", omissions


def _text_or_log(
    lines: Lines,
    items: list[str],
    kind: KindChoice,
    terms: list[str],
    script: bool,
    seen: Container[str] | None,
    opts: ShortenSettings,
    budget: float,
    size: int,
    *,
    view: bool,
    record: bool = False,
) -> tuple[Selection, Kind, float]:
    """Logs keep errors and summaries within the budget (a diff fetched by its id stays whole
    up to ``view_keep_tokens``); documents, listings and plain text stay whole up to
    ``text_keep_tokens`` (a record fetched by its id, up to ``view_keep_tokens``: a document the
    agent asked for) and keep a share of themselves beyond it."""
    listing = kind == "auto" and not view and is_listing(items)
    collapse = not listing or lines.total > opts.listing_keep_lines
    if kind == "log" or (kind == "auto" and not view and not listing):
        document = kind == "auto" and looks_like_document(items)
        marks = classify(lines)
        found = log_kind(lines, marks, document=document)
        if found == "diff" and record and size <= opts.view_keep_tokens:
            # a change fetched by its id (gh pr diff 45) is what the agent reviews: not the
            # agent's own edits (git diff), which are cut as a log
            return _whole(lines, seen, opts), found, budget
        # a script's own result: a table of data it printed is read as a document's rows
        result = script and not document and not mostly_records(items)
        if kind == "log" or found in ("log", "diff") or result:
            # a log's selection only once it is known to be one (most text is not)
            selection = log_selection(
                lines, marks, terms, seen, opts, script=script, collapse=collapse
            )
            if found == "diff":
                budget = _code_budget(budget, size, opts)
            elif script:
                budget = max(budget, opts.script_max_tokens)
            return selection, found, budget
    found = "listing" if listing else "text"
    keep = opts.listing_keep_tokens if listing else opts.text_keep_tokens
    if size <= (max(keep, opts.view_keep_tokens) if record else keep):
        return _whole(lines, seen, opts, collapse=collapse), found, budget
    tables = _record_tables(items) if not listing else Tables()
    selection = doc_selection(lines, items, terms, seen, opts, collapse=collapse, tables=tables)
    share = opts.text_keep_percent / 100 * size
    if tables.rest:  # rows past a table's head: as many as a JSON array of them would keep
        share = max(float(keep), min(share, _without(lines, tables.rest, size)))
    return selection, found, max(budget, share, float(opts.text_keep_tokens) if view else 0.0)


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


def _shorten_json(
    body: str,
    parsed: Any,
    terms: list[str],
    retrieval: Retrieval,
    opts: ShortenSettings,
    size: int,
) -> tuple[str, Kind, list[Omission]]:
    """Records up to ``json_keep_tokens`` stay whole; larger ones lose long uniform arrays'
    middles and long strings' bodies, mildest first, until they fit that size or
    ``text_keep_percent`` of theirs. Long arrays then keep as many head items as that budget
    holds (rows the agent asked for, a query's records), up to
    :data:`~tokenlean.shorten._jsonc.MOST_ROWS`."""
    if size <= opts.json_keep_tokens:
        return body, "json", []
    limit = opts.json_max_string
    budget = max(opts.json_keep_tokens, opts.text_keep_percent / 100 * size)

    def crush(tries: list[tuple[int, int, int]]) -> tuple[str, list[Omission]]:
        return crush_json(
            body,
            parsed,
            tries=tries,
            budget=budget,
            estimate=estimate_tokens,
            terms=terms,
            retrieval=retrieval,
            documents=lambda value: _document_string(value, terms, retrieval, opts),
        )

    text, omissions = crush(
        [
            (opts.json_max_items, opts.json_keep_head, 4 * limit),
            (opts.json_max_items, opts.json_keep_head, limit),
            (opts.json_max_items, min(1, opts.json_keep_head), max(80, limit // 2)),
        ]
    )
    rows = MOST_ROWS if any(o.unit == "items" for o in omissions) else 0
    while rows > opts.json_max_items:
        wider, more = crush([(rows, rows, 4 * limit)])
        if estimate_tokens(wider) <= budget:
            return wider, "json", more
        rows //= 2
    return text, "json", omissions


def _document_string(
    value: str, terms: list[str], retrieval: Retrieval, opts: ShortenSettings
) -> str | None:
    """A long markdown string inside JSON (an issue's body), shortened as a document; its
    markers count the string's own lines, and a closing note says where the whole is."""
    report = shorten(value, kind="text", query=" ".join(terms), options=opts)
    if not report.changed:
        return None
    hint = retrieval.hint()
    note = f"\n[... the whole string: {hint} ...]" if hint else ""
    return report.text + note
