"""Documents: markdown, articles, converted PDFs and web pages a research agent reads.

Headings and labels over indented blocks (with the lines around them, where sections start and
end), the header rows of tables and the rows holding a value rare in their column, conclusions
(``Therefore ... 0.1777 m3``), error lines and lines holding the query's rarer terms are kept;
table rows and lines holding its common terms come next, then the text nearest to them while
the budget lasts. Reference lists, notes and link sections go first. Long lines are cut around
query matches by the line engine.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from itertools import compress, count, pairwise, repeat
from operator import and_, le, not_, or_

from tokenlean.shorten._classify import errors_in
from tokenlean.shorten._detect import is_heading, is_label, is_table_row
from tokenlean.shorten._logs import dropped_lines
from tokenlean.shorten._options import ShortenSettings
from tokenlean.shorten._query import matching_lines
from tokenlean.shorten._records import Tables
from tokenlean.shorten._selection import (
    MUST,
    NEAR,
    PROSE,
    REST,
    Selection,
    around,
    assign,
    distances,
    ends,
)
from tokenlean.shorten._text import Lines

__all__ = ["doc_selection"]

#: Words that open a conclusion; a line holding one and a number is kept early.
_CONCLUSIONS = (
    "therefore", "thus", "hence", "in total", "in conclusion", "the answer", "the result",
    "total of", "in summary", "overall",
)  # fmt: skip
_HEADING_CONTEXT = 2  # lines around a heading: the end of one section and the start of the next
_MAX_CONCLUSIONS = 12
_RARE_SHARE = 0.1  # a query term on at most this share of lines marks what the reader is after
#: Sections that hold citations and links rather than the document's content.
_BACK_MATTER = frozenset(
    {
        "references", "notes", "external links", "see also", "bibliography", "further reading",
        "citations", "sources", "footnotes", "works cited", "navigation menu", "contents",
    }
)  # fmt: skip


def doc_selection(
    lines: Lines,
    items: Sequence[str],
    terms: Sequence[str],
    seen: Container[str] | None,
    options: ShortenSettings,
    *,
    collapse: bool = True,
    tables: Tables | None = None,
) -> Selection:
    """Tiers for a document. ``items`` are its lines as the file holds them (without a view's
    line numbers); ``collapse`` off keeps similar lines apart (a listing of paths); ``tables``:
    its delimited tables, whose rows past each one's head come last unless they hold a rare
    value."""
    n = lines.count
    tables = tables or Tables()
    headings = _headings(items)
    back = _back_matter(items, headings)
    query = matching_lines(lines, terms) - back
    rare = matching_lines(lines, terms, max_share=_RARE_SHARE) - back
    headings |= {i + 1 for i in headings if i + 1 < n and _is_underline(items[i + 1])}
    piped = compress(count(), map(str.startswith, map(str.lstrip, items), repeat("|")))
    markdown = {i for i in piped if is_table_row(items[i])} - back
    table_heads = {i for i in markdown if i - 1 not in markdown} | {
        i + 1 for i in markdown if i - 1 not in markdown and i + 1 in markdown
    }
    errors = errors_in(lines) - back
    must = headings | table_heads | rare | errors | (tables.rare - back)
    must |= _conclusions(lines, back)
    must |= ends(items)
    near = around(headings, _HEADING_CONTEXT, n) | around(rare, options.context_lines, n)
    near |= (markdown - tables.rest) | tables.head | query
    forced = dropped_lines(lines, must, seen, options, keep_seen=(), collapse=collapse)
    tiers = [REST] * n
    assign(tiers, near - back, NEAR)
    for i in back:
        tiers[i] = PROSE
    assign(tiers, must, MUST)
    ranks = distances(must, n)
    for i in tables.head:  # a table's head fills from its top down, as a query's rows read
        ranks[i] = 0
    return Selection(tiers, ranks, forced, {})


def _headings(items: Sequence[str]) -> set[int]:
    """The headings and labels (:func:`is_heading`, :func:`is_label`). C-level passes pick the
    few lines that can be one (starting with ``#``, ending in a colon, or above a rule of ``=``
    or ``-``), and only those are checked: a long log has no Python step per line here."""
    below = [*items[1:], ""]
    under = list(map(str.strip, below))
    hashes = map(str.startswith, map(str.strip, items), repeat("#"))
    colons = map(str.endswith, map(str.rstrip, items), repeat(":"))
    rules = map(
        and_, map(not_, map(str.strip, under, repeat("=-"))), map(le, repeat(3), map(len, under))
    )
    maybe = compress(count(), map(or_, map(or_, hashes, colons), rules))
    return {i for i in maybe if is_heading(items[i], below[i]) or is_label(items[i], below[i])}


def _back_matter(items: Sequence[str], headings: set[int]) -> set[int]:
    """Lines of reference, note and link sections (up to the next heading)."""
    out: set[int] = set()
    for start, end in pairwise([*sorted(headings), len(items)]):
        title = items[start].strip().strip("#").strip().lower()
        if title in _BACK_MATTER:
            out.update(range(start + 1, end))
    return out


def _is_underline(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= 3 and set(stripped) <= {"=", "-"}


def _conclusions(lines: Lines, back: set[int]) -> set[int]:
    """Lines stating a result: a conclusion word and a number (the first few)."""
    out: set[int] = set()
    for word in _CONCLUSIONS:
        out.update(lines.find_all(word, lower=True, limit=64))
    found = sorted(i for i in out - back if any(ch.isdigit() for ch in lines.items[i][:2000]))
    return set(found[:_MAX_CONCLUSIONS])
