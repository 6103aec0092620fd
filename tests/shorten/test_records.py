"""Records a program printed: a query's rows on one line (``str(cursor.fetchall())``), the rows
of a delimited table, and the labelled blocks of a disassembly."""

from __future__ import annotations

import ast
import sqlite3
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenlean import shorten
from tokenlean.shorten import Retrieval
from tokenlean.shorten._records import _ALIGNED, _DELIMITERS, _NUMBER, is_record, printed_items

HINT = Retrieval("o1a2b3", "read_original")


def _orders(n: int = 300) -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE orders (id INTEGER, customer TEXT, city TEXT, total REAL, status)")
    rows = [
        (i, f"cust_{i}", ("Paris", "Lyon")[i % 2], i * 1.5, "active" if i % 41 else "closed")
        for i in range(1, n + 1)
    ]
    db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", rows)
    return db


def _fetchall(query: str = "SELECT * FROM orders") -> str:
    """What LangChain's SQL tool (and ``print(cursor.fetchall())``) returns: one line."""
    return str(_orders().execute(query).fetchall())


def _kept_ids(text: str) -> list[int]:
    return [item[0] for item in ast.literal_eval(text) if isinstance(item, tuple)]


def test_a_query_result_printed_on_one_line_keeps_its_rows_as_a_json_array_would() -> None:
    text = _fetchall()
    report = shorten(text, query={"query": "SELECT * FROM orders"}, retrieval=HINT)
    kept = _kept_ids(report.text)  # still a Python literal, its rows as they were printed
    closed = [i for i in range(1, 301) if i % 41 == 0]
    assert kept[:64] == list(range(1, 65)) and kept[-1] == 300
    assert set(closed) <= set(kept)  # a value rare in its column stays
    assert len(kept) == 64 + len([i for i in closed if i > 64]) + 1
    rows = ast.literal_eval(text)
    for row in ast.literal_eval(report.text):
        assert isinstance(row, str) or row in rows
    markers = [x for x in ast.literal_eval(report.text) if isinstance(x, str)]
    assert sum(int(m.split()[1]) for m in markers) == 300 - len(kept)
    assert 'read_original("o1a2b3")' in markers[0] and "read_original" not in markers[1]
    assert report.tokens_after < report.tokens_before / 2
    assert {o.unit for o in report.omissions} == {"items"}


def test_values_python_prints_that_json_cannot_hold_are_read_too() -> None:
    rows = ", ".join(
        f"(Decimal('{i}.50'), datetime.date(2024, 1, {1 + i % 28}), None, 'a, (b]', \"it's\")"
        for i in range(400)
    )
    text = f"[{rows}]"
    report = shorten(text, retrieval=HINT)
    assert report.changed and report.text.startswith("[(Decimal('0.50')")
    assert report.text.endswith(
        "(Decimal('399.50'), datetime.date(2024, 1, 8), None, 'a, (b]', \"it's\")]"
    )
    assert "similar items omitted (indices 64-398)" in report.text


def test_short_lists_and_lines_that_are_no_sequence_go_to_the_line_engine() -> None:
    short = str(_orders(10).execute("SELECT * FROM orders").fetchall())
    assert shorten(short).text == short  # under text_keep_tokens: whole
    for text in (
        _fetchall() + " trailing words",
        "[" + _fetchall()[1:-1],  # unbalanced
        "{" + _fetchall()[1:-1] + "}",
    ):
        assert printed_items(text) is None
        report = shorten(text)
        assert not any(o.unit == "items" for o in report.omissions)


def test_a_record_fetched_by_its_id_or_a_file_read_is_left_as_the_agent_asked() -> None:
    text = _fetchall()
    report = shorten(text, query={"file_path": "/srv/dump.txt"})
    assert not any(o.unit == "items" for o in report.omissions)


_VALUE = st.one_of(
    st.integers(-(10**6), 10**6),
    st.text(alphabet="ab ,()[]{}'\"\\é", max_size=12),
    st.sampled_from([None, True, False]),
)
_ROW = st.one_of(
    st.tuples(_VALUE, _VALUE, _VALUE),
    st.lists(_VALUE, max_size=4),
    st.dictionaries(st.sampled_from(["id", "state", "x"]), _VALUE, max_size=3),
    _VALUE,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(_ROW, min_size=16, max_size=400), shape=st.sampled_from([list, tuple]))
def test_any_printed_sequence_stays_a_literal_of_its_own_items(rows: list[Any], shape: Any) -> None:
    text = repr(shape(rows))
    printed = printed_items(text)
    assert printed is not None
    assert [ast.literal_eval(text[a:b]) for a, b in printed.items] == rows
    report = shorten(text, retrieval=HINT)
    short = ast.literal_eval(report.text)
    assert type(short) is shape and len(report.text) <= len(text)
    markers = [x for x in short if isinstance(x, str) and "similar item" in x]
    kept = [x for x in short if x not in markers]
    counted = sum(int(m.split()[1]) for m in markers)
    assert counted + len(kept) == len(rows) and (counted == 0) == (not report.changed)


def _psql(n: int = 400) -> str:
    rows = [" id  |      name      | city  | balance | status", "-----+----------------+-------+"]
    for i in range(1, n + 1):
        state = "FROZEN" if i % 37 == 0 else "active"
        rows.append(
            f" {i:3d} | customer_{i:05d} | {('Lyon', 'Nice')[i % 2]:5s} | {i * 7:7d} | {state}"
        )
    return "\n".join([*rows, f"({n} rows)"])


def test_a_table_keeps_its_rows_with_a_rare_value_and_drops_none_as_similar() -> None:
    text = _psql()
    report = shorten(text, retrieval=HINT)
    assert report.changed
    for i in range(37, 401, 37):
        assert f" {i:3d} | customer_{i:05d}" in report.text  # every FROZEN row
    assert {o.reason for o in report.omissions} == {"budget"}  # a row is a record, not noise
    assert min(o.count for o in report.omissions) > 2  # no marker for a row or two
    kept = [int(line.split("|")[0]) for line in report.text.split("\n")[2:] if "customer_" in line]
    assert kept[:60] == list(range(1, 61))  # the head, from its top, as a JSON array's
    assert report.tokens_after < report.tokens_before / 3  # not half: the rows past it go


def test_a_huge_numeric_table_keeps_its_head_and_tail_rows_not_half_nor_two() -> None:
    """Rows that differ only in their numbers were collapsed to the first and last as
    similar lines (the data gone); kept as a document, half of 40,000 rows would stay."""
    text = "\n".join(f"{i},{i * 3},{i % 7}.25" for i in range(40_000))
    report = shorten(text, retrieval=HINT)
    lines = report.text.split("\n")
    assert lines[:64] == text.split("\n")[:64] and lines[-1] == "39999,119997,1.25"
    assert 1_000 < report.tokens_after < 5_000


def test_numeric_rows_are_not_collapsed_as_similar_but_progress_lines_still_are() -> None:
    numbers = "\n".join(f"{i},{i * 3},{i % 7}.25" for i in range(200))
    report = shorten(numbers, max_tokens=100)
    assert not any(o.reason == "similar" for o in report.omissions)
    frame = "\n".join(
        [
            "     amount  region  score",
            *(f"{i:<4d} {i * 11:6d}   north  {i % 5}.5" for i in range(80)),
        ]
    )
    assert not any(o.reason == "similar" for o in shorten(frame).omissions)
    progress = "\n".join(
        f"{i:3d}%|{'#' * (i // 10):10s}| {i}/100 [00:{i:02d}<00:10, 9.9it/s]" for i in range(100)
    )
    assert any(o.reason == "similar" for o in shorten(progress).omissions)


def test_a_disassembly_keeps_the_label_of_every_function() -> None:
    lines = ["", "chall:     file format elf64-x86-64", "", "Disassembly of section .text:", ""]
    address = 0x401000
    for name in ("_start", "deregister_tm_clones", "frame_dummy", "win", "vuln", "main", "fini"):
        lines.append(f"{address:016x} <{name}>:")
        for k in range(60):
            lines.append(f"  {address:x}:\t48 89 e5             \tmov    %rsp,%rbp  # {k}")
            address += 3
        lines.append("")
    report = shorten("\n".join(lines), retrieval=HINT)
    assert report.changed
    for name in ("_start", "frame_dummy", "win", "vuln", "main", "fini"):
        assert f"<{name}>:" in report.text


def test_quotes_that_never_close_end_the_reading_at_once() -> None:
    """Each escaped quote could start a string scanned to the end of the line (quadratic);
    the first that does not close ends the reading instead."""
    for text in (
        "[" + "'\\" * 300_000 + "]",
        "(" + '"\\' * 300_000 + ")",
        "[" + "1, " * 100_000 + "'a]",
    ):
        assert printed_items(text) is None
        assert len(shorten(text).text) < 5_000


def test_a_search_keeps_the_name_of_every_file_over_its_matches() -> None:
    """OpenCode's ``grep``: each file's name over its indented matches (half were lost)."""
    words = ["primary", "accent", "muted", "border", "ring", "card", "popover", "chart", "input"]
    blocks = [
        f"/repo/registry/part-{k}.tsx:\n"
        + "\n\n".join(
            f'  Line {7 * j + k}:         className="text-{words[j % 9]} '
            f'bg-{words[(j + k) % 9]}-{k}{j} rounded-full"'
            for j in range(25)
        )
        for k in range(30)
    ]
    text = "Found 750 matches\n" + "\n\n\n".join(blocks)
    report = shorten(text, query={"pattern": "className"}, retrieval=HINT)
    assert report.kind == "text" and report.tokens_after < report.tokens_before * 0.6
    assert all(f"/repo/registry/part-{k}.tsx:" in report.text for k in range(30))


def _is_record_as_it_was(line: str) -> bool:
    """:func:`is_record` before the first word was only split off lines opening with a digit."""
    for delimiter in _DELIMITERS:
        if delimiter in line and any(_NUMBER.fullmatch(f.strip()) for f in line.split(delimiter)):
            return True
    words = line.split()
    if len(words) >= 3 and words[0].isdigit() and any(map(_NUMBER.fullmatch, words[1:])):
        return True
    fields = _ALIGNED.split(line.strip()) if "  " in line else []
    return len(fields) >= 3 and sum(1 for f in fields if _NUMBER.fullmatch(f)) >= 2


_RECORD_PIECES = [
    "12",
    "3.5",
    "٣",
    "²",
    " ",
    "  ",
    "\t",
    "\x1c",
    "\u3000",
    "|",
    ",",
    "E",
    "ok",
    "-",
]


@given(st.lists(st.sampled_from(_RECORD_PIECES) | st.text(max_size=2), max_size=12).map("".join))
def test_records_are_told_as_before(line: str) -> None:
    assert is_record(line) == _is_record_as_it_was(line)
