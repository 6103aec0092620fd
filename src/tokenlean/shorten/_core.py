"""``shorten``: text in, shorter text and a report out; pure, deterministic, linear time.

What :func:`shorten` keeps of each content kind (``max_tokens`` and the ``*_keep_*`` limits
are :class:`~tokenlean.shorten.ShortenSettings` fields):

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

A text read line by line is left to :mod:`tokenlean.shorten._select`.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import replace
from typing import Any, get_args

from tokenlean import checks
from tokenlean.shorten._asks import answers_a_query, asks_for_hits, computes_only, files_read
from tokenlean.shorten._calls import asks_an_agent, fetches_a_record, runs_own_script
from tokenlean.shorten._envelope import parse_json, split_envelope
from tokenlean.shorten._focus import focus_of
from tokenlean.shorten._jsonc import MOST_ROWS, crush_json
from tokenlean.shorten._layout import parts, run_header, shorten_parts
from tokenlean.shorten._markers import Retrieval
from tokenlean.shorten._options import DEFAULT_OPTIONS, ShortenSettings
from tokenlean.shorten._query import query_terms, query_text
from tokenlean.shorten._reads import file_read, requested_lines
from tokenlean.shorten._records import printed_items, shorten_printed
from tokenlean.shorten._report import Kind, Omission, ShortenReport
from tokenlean.shorten._select import KindChoice, Reading, shorten_lines
from tokenlean.shorten._text import estimate_tokens
from tokenlean.shorten._wrapped import NESTING, unwrap
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter

__all__ = ["shorten"]

_KINDS: tuple[KindChoice, ...] = get_args(KindChoice)


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
    """Shorten ``text``, keeping what a reader of it needs; each content kind on purpose (logs
    and test output, JSON, file views, source code, documents and listings, a query's rows,
    pages, outputs wrapped in JSON, huge texts: the module docstring says what each keeps).

    ``query`` (text, or a tool call's arguments) names what the reader looks for, ``kind`` the
    content kind when it is known, ``max_tokens`` replaces ``options.max_tokens``. ``context``
    is prose about what the reader looks for (an agent's note when it made the call): its
    code-like words join the query. ``seen`` holds the stripped lines the reader was
    already shown: runs of them are replaced by a pointer instead of being repeated. Every
    omission is marked in the text, with ``retrieval`` saying how to get it back (the first
    marker names the call; later ones only their lines). The result is never longer than
    ``text``; when nothing can be saved it is ``text``.
    """
    _check_arguments(text, query, context, seen, retrieval, counter, options)
    opts = options or DEFAULT_OPTIONS
    if max_tokens is not None:
        opts = replace(opts, max_tokens=max_tokens)
    checks.one_of(kind, "kind", _KINDS)
    count = (counter or DEFAULT_COUNTER).count
    before = count(text)
    if before <= opts.max_tokens and seen is None and text.count("\n") < opts.similar_run:
        return ShortenReport(text, "text" if kind == "auto" else kind, before, before)
    envelope, parted = run_header(split_envelope(text))
    reading = _reading(query, context, kind, seen, retrieval or Retrieval(), opts, parted=parted)
    budget = opts.max_tokens - estimate_tokens(envelope.head + envelope.tail)
    body, found, omissions = _shorten_body(envelope.body, reading, budget, envelope.body_line)
    new_text = envelope.head + body + envelope.tail
    after = count(new_text) if omissions else before
    if not omissions or after >= before or len(new_text) >= len(text):
        return ShortenReport(text, found, before, before)
    return ShortenReport(new_text, found, before, after, tuple(omissions))


def _reading(
    query: str | Mapping[str, Any] | None,
    context: str | None,
    kind: KindChoice,
    seen: Container[str] | None,
    retrieval: Retrieval,
    opts: ShortenSettings,
    *,
    parted: bool,
) -> Reading:
    """What the call asks for, read once from its ``query`` (a tool call's arguments) and
    ``context`` (code-like words of the agent's note join the query's terms)."""
    terms = query_terms(query, limit=opts.max_query_terms)
    if context:
        extra = query_terms(context, limit=opts.max_query_terms, code_only=True)
        terms += [term for term in extra if term not in terms]
    asked = asks_for_hits(query) or (parted and computes_only(query))
    read = file_read(query) or ("range" if asked else None)
    span = requested_lines(query) if read == "range" else None
    return Reading(
        kind,
        terms,
        runs_own_script(query),
        seen,
        retrieval,
        opts,
        read=read,
        paging=span is not None and span >= opts.page_lines,
        answer=asks_an_agent(query),
        record=fetches_a_record(query),
        focus=focus_of(query),
        files=files_read(query) if read == "file" else 1,
        parted=parted,
        hits=answers_a_query(query),
    )


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
    if retrieval is not None:
        checks.instance(retrieval, "retrieval", Retrieval, "a Retrieval(handle, tool)")
    if counter is not None:
        checks.token_counter(counter, "counter")
    if options is not None:
        checks.instance(options, "options", ShortenSettings, "a ShortenSettings")


def _shorten_body(
    body: str, reading: Reading, budget: float, line_offset: int, depth: int = 0
) -> tuple[str, Kind, list[Omission]]:
    """Sizes here are the shortener's own fast :func:`estimate_tokens` (how much of a budget a
    part takes: many parts are sized per text); ``depth``: the JSON envelopes ``body`` was taken
    out of. A JSON record, an envelope's inner text, the parts of what a script printed and a
    line of printed records each go their own way; any other text is read line by line."""
    kind = reading.kind
    ok, parsed = parse_json(body) if kind in ("auto", "json") else (False, None)
    wrapped = None
    if kind != "json" and depth < NESTING:
        wrapped = unwrap(body, [parsed]) if ok else unwrap(body)
    if wrapped is not None:  # the text inside, as if it came alone; the envelope kept
        inner, inner_kind, omissions = _shorten_body(
            wrapped.body,
            replace(reading, parted=False),
            budget,
            line_offset + wrapped.body_line,
            depth + 1,
        )
        return (wrapped.wrap(inner) if omissions else body), inner_kind, omissions
    if ok and kind in ("auto", "json"):
        return _json_body(body, parsed, reading)
    if kind == "json":
        return body, "json", []
    if reading.parted and depth < NESTING and (ranges := parts(body)) is not None:
        each = replace(reading, focus=None, parted=False)  # a part is no view a tool moved

        def part(text: str, share: float, first: int) -> tuple[str, Kind, list[Omission]]:
            return _shorten_body(text, each, share, line_offset + first, depth + 1)

        return shorten_parts(body, ranges, budget, part)
    if kind in ("auto", "text") and reading.read is None and not (reading.answer or reading.record):
        printed = _printed_body(body, reading.terms, reading.retrieval, reading.opts, line_offset)
        if printed is not None:
            return printed
    return shorten_lines(body, reading, budget, line_offset)


def _json_body(body: str, parsed: Any, reading: Reading) -> tuple[str, Kind, list[Omission]]:
    """A JSON record: whole when the call asked for it (a record asked for, another model's
    answer, a JSON file the agent printed, the result of a script it ran: what it ran the
    script for) and it is within ``view_keep_tokens``, else crushed."""
    size = estimate_tokens(body)
    asked = reading.answer or reading.record or reading.script or reading.read is not None
    if asked and size <= reading.opts.view_keep_tokens:
        return body, "json", []
    return _shorten_json(body, parsed, reading.terms, reading.retrieval, reading.opts, size)


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
