"""``shorten``: text in, shorter text and a report out; pure, deterministic, linear time."""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import replace
from typing import Any, Literal

from tokenlean import checks
from tokenlean.shorten.code import code_selection
from tokenlean.shorten.detect import looks_like_source, parse_json, split_envelope
from tokenlean.shorten.jsonc import crush_json
from tokenlean.shorten.lines import render
from tokenlean.shorten.logs import log_selection
from tokenlean.shorten.markers import Retrieval
from tokenlean.shorten.options import DEFAULT_OPTIONS, ShortenOptions
from tokenlean.shorten.query import query_terms, query_text
from tokenlean.shorten.report import Kind, Omission, ShortenReport
from tokenlean.shorten.text import Lines, estimate_tokens
from tokenlean.tokens import TokenCounter

KindChoice = Literal["auto", "log", "code", "json", "text"]
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
    options: ShortenOptions | None = None,
) -> ShortenReport:
    """Shorten ``text`` to about ``max_tokens``, keeping what a reader of it needs.

    Logs keep errors, tracebacks, exit codes, summaries and lines matching ``query`` (text, or a
    tool call's arguments); similar lines collapse. JSON stays valid JSON with long arrays
    crushed. Source code keeps its outline and the parts the query is about. ``context`` is
    prose about what the reader looks for (an agent's note when it made the call): its
    code-like words join the query. ``seen`` holds the stripped lines the reader was already
    shown: runs of them are replaced by a pointer instead of being repeated.
    Every omission is marked in the text, with ``retrieval`` saying how to get it back.
    The result is never longer than ``text``; when nothing can be saved it is ``text``.
    """
    _check_arguments(text, query, context, seen, retrieval, counter, options)
    opts = options or DEFAULT_OPTIONS
    if max_tokens is not None:
        opts = replace(opts, max_tokens=max_tokens)
    if not isinstance(kind, str) or kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    count = counter.count if counter is not None else estimate_tokens
    before = count(text)
    if before <= opts.max_tokens and seen is None and text.count("\n") < opts.similar_run:
        return ShortenReport(text, "text" if kind == "auto" else kind, before, before)
    envelope = split_envelope(text)
    terms = query_terms(query, limit=opts.max_query_terms)
    if context:
        extra = query_terms(context, limit=opts.max_query_terms, code_only=True)
        terms += [term for term in extra if term not in terms]
    where = retrieval or Retrieval()
    budget = opts.max_tokens - estimate_tokens(envelope.head + envelope.tail)
    body, found, omissions = _shorten_body(
        envelope.body, kind, terms, seen, where, opts, budget, envelope.body_line
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
    if options is not None and not isinstance(options, ShortenOptions):
        raise checks.ArgumentTypeError(
            f"options must be a ShortenOptions, got {checks.described(options)}"
        )


def _shorten_body(
    body: str,
    kind: KindChoice,
    terms: list[str],
    seen: Container[str] | None,
    retrieval: Retrieval,
    opts: ShortenOptions,
    budget: float,
    line_offset: int,
) -> tuple[str, Kind, list[Omission]]:
    if kind in ("auto", "json"):
        ok, parsed = parse_json(body)
        if ok:
            tries = [
                (opts.json_max_items, opts.json_keep_head, opts.json_max_string),
                (max(2, opts.json_max_items // 2), min(1, opts.json_keep_head), 160),
                (2, 1, 80),
            ]
            text, omissions = crush_json(
                body,
                parsed,
                tries=tries,
                budget=budget,
                estimate=estimate_tokens,
                terms=terms,
                retrieval=retrieval,
            )
            return text, "json", omissions
        if kind == "json":
            return body, "json", []
    lines = Lines(body)
    found: Kind
    if kind == "code" or (kind == "auto" and looks_like_source(body)):
        selection, found = code_selection(lines, terms, seen, opts), "code"
    else:
        selection, found = log_selection(lines, terms, seen, opts)
        if kind in ("log", "text"):
            found = kind
    if found in ("code", "diff"):  # the reader asked for exactly these lines: cut less
        share = opts.code_keep_percent / 100 * estimate_tokens(body)
        budget = max(budget + opts.code_max_tokens - opts.max_tokens, share)
    text, omissions = render(
        lines,
        selection,
        budget=budget,
        retrieval=retrieval,
        terms=terms,
        long_line_chars=opts.long_line_chars,
        line_offset=line_offset,
    )
    return text, found, omissions
