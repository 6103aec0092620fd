"""The query: terms taken from a tool call's arguments, and the lines that contain them.

A bash command like ``grep -n "get_order_by" django/db/models/sql/compiler.py`` yields the
terms ``get_order_by``, ``django/db/models/sql/compiler.py`` and ``compiler.py``; shell words,
flags and plain numbers are left out. Matching is case-insensitive substring search done with
``str.find`` over the whole text, so it is linear and never backtracks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any

from tokenlean import checks
from tokenlean.shorten._text import Lines

__all__ = ["MAX_QUERY_CHARS", "matching_lines", "query_terms", "query_text"]

#: Query text beyond this many characters is ignored (a heredoc script can be long).
MAX_QUERY_CHARS = 4000
_CHUNK = re.compile(r"[\w][\w./:-]*")
# shell words and common code words: they match everywhere and mean nothing
_STOP_WORDS = (
    "awk bash cat cd chmod cp curl echo env export find git grep head less ls mkdir mv nl pip "
    "pwd python python3 pytest rm sed sort tail tee touch uniq wc xargs which true false null "
    "none and for the not with from import def class return print self this that testbed tmp "
    "dev usr bin opt lib src test tests args kwargs main exit else elif then done while type name"
)
_STOP = frozenset(_STOP_WORDS.split())


def query_text(query: str | Mapping[str, Any] | Sequence[Any] | None) -> str:
    """Flatten a query (text, or a tool call's arguments) to text."""
    if query is None:
        return ""
    if not isinstance(query, (str, Mapping, list, tuple)):
        raise checks.ArgumentTypeError(
            "query must be text, a tool call's arguments (a mapping) or a list of them, got "
            + checks.described(query)
        )
    if isinstance(query, str):
        return query[:MAX_QUERY_CHARS]
    parts: list[str] = []
    _collect(query, parts)
    return " ".join(parts)[:MAX_QUERY_CHARS]


def _collect(value: object, parts: list[str]) -> None:
    if isinstance(value, str):
        parts.append(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            _collect(item, parts)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _collect(item, parts)
    elif value is not None and not isinstance(value, bool):
        parts.append(json.dumps(value, default=str))


def query_terms(
    query: str | Mapping[str, Any] | None, *, limit: int = 24, code_only: bool = False
) -> list[str]:
    """Distinct lower-cased terms worth searching for, in order of first appearance.

    With ``code_only`` only code-like terms count (a ``_``, a digit, an inner capital, a dot
    or a slash): use it for prose such as an agent's note on what it is looking for.
    """
    checks.integer(limit, "limit", at_least=1)
    checks.flag(code_only, "code_only")
    terms: list[str] = []
    seen: set[str] = set()
    # each distinct chunk once, in order of first appearance (a chunk met before adds no new
    # term): found, trimmed and deduplicated in C-level passes, as a long note has thousands
    found = _CHUNK.findall(query_text(query))
    chunks: Iterable[str] = dict.fromkeys(map(str.strip, found, repeat(".:-/")))
    for chunk in filter(_code_like, chunks) if code_only else chunks:
        for term in _terms_of(chunk):
            low = term.lower()
            if low not in seen and low not in _STOP:
                seen.add(low)
                terms.append(low)
                if len(terms) >= limit:
                    return terms
    return terms


def _code_like(chunk: str) -> bool:
    if chunk.isalpha() and chunk[1:].islower():  # a plain word, most of prose: decided at once
        return False
    if any(map(chunk.__contains__, "_./")) or any(map(str.isdigit, chunk)):
        return len(chunk) >= 3
    return any(map(str.isupper, chunk[1:])) and any(map(str.islower, chunk))


def _terms_of(chunk: str) -> list[str]:
    if len(chunk) < 3 or chunk.rstrip("pPlLdD").isdigit() or chunk.startswith("-"):
        return []
    out: list[str] = []
    if "/" in chunk:
        out.append(chunk)
        base = chunk.rsplit("/", 1)[-1]
        if len(base) >= 3:
            out.append(base)
        return out
    if "::" in chunk:  # pytest node ids: path::Class::test
        return [part for part in chunk.split("::") if len(part) >= 3]
    if "." in chunk:
        out.append(chunk)
        out.extend(p for p in chunk.split(".") if len(p) >= 4 and not p.isdigit())
        return out
    if any(map(str.isalpha, chunk)) and (len(chunk) >= 4 or not chunk.isalpha()):
        out.append(chunk)
    return out


def matching_lines(lines: Lines, terms: Sequence[str], *, max_share: float = 0.4) -> set[int]:
    """Indices of lines containing a term. A term found on too many lines discriminates
    nothing (its matches would keep the whole text), so its matches are left out."""
    cap = max(20, int(max_share * lines.count))
    hits: set[int] = set()
    for term in terms:
        found = lines.find_all(term, lower=True, limit=cap + 1)
        if len(found) <= cap:
            hits.update(found)
    return hits
