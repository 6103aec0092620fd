"""Records a program printed: a query's rows on one line, or as a delimited table.

``str(cursor.fetchall())`` (LangChain's SQL tool returns exactly that), a ``print(rows)`` of
tuples, dicts or ``Row(...)`` objects: one long line that is not JSON, which the line engine
would cut to its head and tail like any long line. It is shortened as a JSON array of records
is instead: its first items as far as the budget holds (at most
:data:`~tokenlean.shorten._jsonc.MOST_ROWS`), its last item, and the items that stand out (a
value rare in its column, such as ``'closed'`` among ``'active'``, or a query term) stay as they
were printed; each omitted stretch becomes one string element saying how many items went and
how to get them back. The line is read with one regular-expression pass (quotes, brackets and
commas only), so the cost stays linear; anything unbalanced is left to the line engine.

The rows of a table (``psql``, ``sqlite3``, CSV, TSV) are records too: :func:`is_record` keeps
them from collapsing as similar lines (their numbers are what they say), and
:func:`find_tables` tells the document shortener which rows hold a rare value and where each
table of data ends its head.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby, repeat
from operator import add, and_, contains, itemgetter, le, not_, or_

from tokenlean.shorten._jsonc import MOST_ROWS
from tokenlean.shorten._markers import Retrieval, item_marker
from tokenlean.shorten._report import Omission

__all__ = [
    "Printed",
    "Tables",
    "find_tables",
    "is_record",
    "may_be_records",
    "mostly_records",
    "printed_items",
    "shorten_printed",
]

#: Fewer items than this are left to the line engine (a short list is rarely a query's rows).
MIN_ITEMS = 16
#: A quoted string (possessive: no backtracking), a bracket or a comma, or a quote that opens
#: no string, which ends the reading: a string that does not close makes every later quote
#: fail the same way, and looking for each one's end would cost quadratic time.
_TOKENS = re.compile(r"""'(?:[^'\\\n]++|\\.)*+'|"(?:[^"\\\n]++|\\.)*+"|[][(){},]|['"]""")
_CLOSE = {"[": "]", "(": ")", "{": "}"}
_MAX_NOTABLE = 50  # items kept for a rare value or a query term, at most
_COMMON_SHARE = 0.5  # a column is categorical when one value fills at least this share of it
_RARE_SHARE = 0.1  # and a value held by at most this share of the items stands out
_MAX_VALUE = 40  # longer values are text, not a category


@dataclass(frozen=True, slots=True)
class Printed:
    """A printed sequence: ``items`` are each item's ``(start, end)`` in its line (the text
    before the first and after the last are its brackets), ``fields[i]`` the values of item
    ``i`` that could be categories, by column."""

    items: list[tuple[int, int]]
    fields: list[dict[str, str]]


def printed_items(line: str) -> Printed | None:
    """``line`` read as a printed sequence of at least :data:`MIN_ITEMS` items, or ``None``."""
    stripped = line.strip()
    if len(stripped) < 2 or stripped[0] not in "[(" or _CLOSE[stripped[0]] != stripped[-1]:
        return None
    stack: list[str] = []
    items: list[tuple[int, int]] = []
    fields: list[dict[str, str]] = []
    start = field_start = column = 0
    current: dict[str, str] = {}
    for match in _TOKENS.finditer(line):
        token, at = match.group(), match.start()
        depth = len(stack)
        if token in ("'", '"'):
            return None  # a quote that opens no string: not a printed literal
        if token in _CLOSE:
            stack.append(_CLOSE[token])
            if depth == 0:
                start = at + 1
            elif depth == 1:
                field_start, column, current = at + 1, 0, {}
        elif token in ("]", ")", "}"):
            if not stack or stack.pop() != token:
                return None
            if depth == 2:
                _add_field(current, column, line[field_start:at])
            elif depth == 1:
                if at != len(line.rstrip()) - 1:
                    return None  # more follows the sequence
                _end_item(line, start, at, current, items, fields)
        elif token == "," and depth == 1:
            _end_item(line, start, at, current, items, fields)
            start, current = at + 1, {}
        elif token == "," and depth == 2:
            _add_field(current, column, line[field_start:at])
            field_start, column = at + 1, column + 1
    if stack or len(items) < MIN_ITEMS:
        return None
    return Printed(items, fields)


def _end_item(
    line: str,
    start: int,
    end: int,
    current: dict[str, str],
    items: list[tuple[int, int]],
    fields: list[dict[str, str]],
) -> None:
    """Records the item in ``line[start:end]``, without the blanks around it (none after a
    trailing comma)."""
    text = line[start:end]
    if text.strip():
        lead = len(text) - len(text.lstrip())
        items.append((start + lead, start + len(text.rstrip())))
        fields.append(current)


def _add_field(current: dict[str, str], column: int, text: str) -> None:
    """Records ``text`` as column ``column`` (or, ``'key': value``, as column ``key``) when it
    could be a category: a short quoted string, ``True``, ``False`` or ``None``."""
    key, value = str(column), text.strip()
    head, colon, rest = value.partition(":")
    if colon and head.strip()[:1] in ("'", '"'):
        key, value = head.strip(), rest.strip()
    if value in ("True", "False", "None") or (
        len(value) <= _MAX_VALUE and len(value) >= 2 and value[0] in "'\"" and value[-1] == value[0]
    ):
        current[key] = value


def rare_items(fields: Sequence[dict[str, str]]) -> set[int]:
    """Items holding a value that few others hold in a column mostly filled by one value."""
    columns: dict[str, Counter[str]] = {}
    for row in fields:
        for key, value in row.items():
            columns.setdefault(key, Counter())[value] += 1
    n = len(fields)
    limit = max(1, int(_RARE_SHARE * n))
    out: set[int] = set()
    for key, counts in columns.items():
        if len(counts) < 2 or counts.most_common(1)[0][1] < _COMMON_SHARE * n:
            continue
        rare = {value for value, seen in counts.items() if seen <= limit}
        out.update(i for i, row in enumerate(fields) if row.get(key) in rare)
    return out


def shorten_printed(
    line: str,
    printed: Printed,
    *,
    budget: float,
    estimate: Callable[[str], float],
    terms: Sequence[str],
    retrieval: Retrieval,
    number: int,
) -> tuple[str, list[Omission]]:
    """``line`` with only the items :mod:`this module <tokenlean.shorten._records>` keeps;
    ``number`` is the line's 1-based number in the whole text (for the omissions)."""
    spans = printed.items
    low = [line[a:b].lower() for a, b in spans]
    notable = sorted(rare_items(printed.fields) | {i for i, t in enumerate(low) if _has(t, terms)})
    keep = set(notable[:_MAX_NOTABLE]) | {len(spans) - 1}
    spent = sum(estimate(line[a:b]) for i, (a, b) in enumerate(spans) if i in keep)
    for i, (a, b) in enumerate(spans[:MOST_ROWS]):
        if i not in keep:
            spent += estimate(line[a:b])
            if spent > budget and i > 0:
                break
            keep.add(i)
    return _render(line, spans, keep, retrieval, number)


def _has(text: str, terms: Sequence[str]) -> bool:
    return any(term in text for term in terms)


def _render(
    line: str, spans: list[tuple[int, int]], keep: set[int], retrieval: Retrieval, number: int
) -> tuple[str, list[Omission]]:
    """The kept items as printed, with one string element for each omitted stretch (a single
    item between kept ones stays: its marker would cost about as much)."""
    keep = keep | {i for i in range(1, len(spans) - 1) if i - 1 in keep and i + 1 in keep}
    parts = [line[: spans[0][0]]]
    omissions: list[Omission] = []
    i = 0
    while i < len(spans):
        if i in keep:
            parts.append(line[spans[i][0] : spans[i][1]])
            i += 1
        else:
            j = i
            while j < len(spans) and j not in keep:
                j += 1
            marker = item_marker(j - i, i, j - 1, retrieval, hinted=bool(omissions))
            parts.append(json.dumps(marker, ensure_ascii=False))
            omissions.append(Omission("items", j - i, number, number, "items"))
            i = j
        if i < len(spans):
            parts.append(", ")
    parts.append(line[spans[-1][1] :])
    return "".join(parts), omissions


#: What separates a table row's fields (``psql``, ``sqlite3``, markdown; TSV; CSV).
_DELIMITERS = ("|", "\t", ",")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def is_record(line: str) -> bool:
    """A row of data: fields split by a delimiter, one of them a bare number (``17 | Lyon |
    4520``, ``3,0.25,ok``), or a data frame's row (an integer index, then columns, one of them
    a bare number). Its numbers are what it says, unlike a progress line's."""
    for delimiter in _DELIMITERS:
        if delimiter in line:
            fields = line.split(delimiter)
            if any(_NUMBER.fullmatch(field.strip()) for field in fields):
                return True
    # the first word opens with the first character after blanks: no digit there, no index
    if line.lstrip()[:1].isdigit():
        words = line.split()
        if len(words) >= 3 and words[0].isdigit() and any(map(_NUMBER.fullmatch, words[1:])):
            return True
    # columns aligned by blanks (a script's table): two of them at least bare numbers
    fields = _ALIGNED.split(line.strip()) if "  " in line else []
    return len(fields) >= 3 and sum(1 for f in fields if _NUMBER.fullmatch(f)) >= 2


_ALIGNED = re.compile(r" {2,}|\t")


def may_be_records(lines: Sequence[str]) -> list[bool]:
    """Whether each of ``lines`` may be a record (:func:`is_record` says which are), in C-level
    passes: a record has a delimiter or starts with a digit, or its columns are split by two
    runs of blanks at least, and two of its columns are bare numbers: each opens the line or
    follows a run of blanks (a log of pytest ``E`` lines, each with a run of blanks after the
    ``E`` and a number at most, then costs no regex per line). No newline in any."""
    stripped = list(map(str.strip, lines))
    found = list(map(str.isdigit, map(itemgetter(slice(0, 1)), stripped)))
    for delimiter in _DELIMITERS:
        found = list(map(or_, found, map(contains, lines, repeat(delimiter))))
    aligned = map(le, repeat(2), map(str.count, stripped, repeat("  ")))
    # one "?" per character outside ASCII: such a line may hold one of Unicode's digits
    marked = "\n".join(stripped).encode("ascii", "replace").translate(_SIGNED)
    signed = marked.decode("ascii").split("\n")
    starts = map(
        add, map(str.count, signed, repeat("  0")), map(str.startswith, signed, repeat("0"))
    )
    numbered = map(or_, map(le, repeat(2), starts), map(not_, map(str.isascii, stripped)))
    return list(map(or_, found, map(and_, aligned, numbered)))


#: ASCII digits and signs as "0": where a bare number may start.
_SIGNED = bytes.maketrans(b"+-123456789", b"0" * 11)


#: A text is a table of data when at least this share of its non-blank lines are records.
_TABLE_SHARE = 0.5


def mostly_records(items: Sequence[str]) -> bool:
    """Whether most non-blank lines of ``items`` (the first 400) are rows of data: a table a
    script printed, whose rows are its result, not a log's lines."""
    sample = list(filter(str.strip, items[:400]))
    return bool(sample) and sum(map(is_record, sample)) >= _TABLE_SHARE * len(sample)


@dataclass(frozen=True, slots=True)
class Tables:
    """The delimited tables of a text (runs of at least :data:`MIN_ITEMS` lines with the same
    number of the same delimiter): the rows holding a value rare in a column mostly filled by
    one (``FROZEN`` among ``active``), which a reader of a query's rows looks for, and of the
    tables of data a program printed, every row and the first :data:`MOST_ROWS`."""

    rows: frozenset[int] = frozenset()
    head: frozenset[int] = frozenset()
    rare: frozenset[int] = frozenset()

    @property
    def rest(self) -> frozenset[int]:
        """The rows past each table's head that hold nothing rare."""
        return self.rows - self.head - self.rare


def find_tables(items: Sequence[str]) -> Tables:
    """The :class:`Tables` of ``items`` (a few C-level passes per delimiter, then the rows)."""
    rows: set[int] = set()
    head: set[int] = set()
    rare: set[int] = set()
    for delimiter in _DELIMITERS:
        start = 0
        for count, run in groupby(map(str.count, items, repeat(delimiter))):
            size = sum(1 for _ in run)
            if count and size >= MIN_ITEMS:
                table = range(start, start + size)
                fields = [_row_fields(items[i], delimiter) for i in table]
                rare.update(table[i] for i in rare_items(fields))
                if _printed(items, table, delimiter):
                    rows.update(table)
                    head.update(table[:MOST_ROWS])
            start += size
    return Tables(frozenset(rows), frozenset(head), frozenset(rare))


def _printed(items: Sequence[str], table: range, delimiter: str) -> bool:
    """Whether ``table`` holds rows of data a program printed: most of its first rows have a
    field that is a bare number (an id, an amount), and it is no markdown table (``| a |``,
    written for a reader, as a converted web page's tables are: read as a document)."""
    first = items[table.start].strip()
    if first.startswith("|") and first.endswith("|"):
        return False
    sample = [items[i].split(delimiter) for i in table[:MOST_ROWS]]
    numeric = sum(1 for fields in sample if any(_NUMBER.fullmatch(f.strip()) for f in fields))
    return 2 * numeric > len(sample)


def _row_fields(line: str, delimiter: str) -> dict[str, str]:
    """A table row's values by column, those that could be a category (short, not numbers)."""
    out: dict[str, str] = {}
    for column, field in enumerate(line.split(delimiter)):
        value = field.strip()
        if value and len(value) <= _MAX_VALUE and not _NUMBER.fullmatch(value):
            out[str(column)] = value
    return out
