"""benchmarks.room: the floor bills least, the oracle between it and no middleware, and the
oracle keeps every reference the agent went on to use."""

from __future__ import annotations

import argparse

import pytest
from benchmarks.room import (
    ROWS,
    markdown,
    measure_one,
    oracle_text,
    oracle_trajectory,
    pooled,
    ratio,
    share,
    used_references,
)

from tests.data import BUNDLED
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._metrics import RunMetrics
from tokenlean.replay._refs import message_refs

Table = dict[str, dict[str, RunMetrics]]

RUNS = [  # two bundled runs: one short, one with long outputs
    BUNDLED / "sweagent" / "demo__ctf_web__i_got_id_demo.json",
    BUNDLED / "miniswe_deepseek" / "chat_test__django__django-11001.json",
]


@pytest.fixture(scope="module")
def table() -> Table:
    return pooled([measure_one(str(path)) for path in RUNS])


def test_oracle_text_keeps_the_lines_with_a_used_reference() -> None:
    text = "header\nsee django/db/models.py\nnoise\nmore noise\nline 1234 here\ntail"
    kept = oracle_text(text, frozenset({"django/db/models.py", "1234"}))
    assert kept.split("\n") == [
        "[... 1 line omitted]",
        "see django/db/models.py",
        "[... 2 lines omitted]",
        "line 1234 here",
        "[... 1 line omitted]",
    ]
    assert oracle_text(text, frozenset()) == "[... 6 lines omitted]"


def test_the_oracle_keeps_every_used_reference_where_it_first_appears() -> None:
    trajectory = load_trajectory(RUNS[1])
    used = used_references(trajectory.messages)
    assert used  # the agent reuses what it read
    edited = oracle_trajectory(trajectory).messages
    for index, refs in used.items():
        assert refs <= message_refs(edited[index])
        assert len(edited[index].text) <= len(trajectory.messages[index].text) + 40


def test_floor_le_oracle_le_none(table: Table) -> None:
    for source, rows in table.items():
        assert set(rows) == set(ROWS)
        floor, oracle = (ratio(rows, n, "billed_anthropic") for n in ("floor", "oracle"))
        assert floor <= oracle <= ratio(rows, "none", "billed_anthropic") == 1.0, source


def test_oracle_recall_is_full_and_at_least_the_stacks(
    table: Table,
) -> None:
    for source, rows in table.items():
        oracle = rows["oracle"]
        assert oracle.refs_total > 0, source
        assert oracle.recall == 1.0, source
        for name in ("recommended", "always", "floor"):
            assert oracle.recall >= rows[name].recall, (source, name)
        assert rows["floor"].recall < 1.0, source


def test_shares_and_report(table: Table) -> None:
    rows = table["(all)"]
    assert share(rows, "oracle", "billed_anthropic") == pytest.approx(1.0)
    floor = share(rows, "floor", "billed_anthropic")
    assert floor is not None and floor >= 1.0
    args = argparse.Namespace(limit=1, jobs=1, directory="x")
    runs = dict.fromkeys(table, 1) | {"(all)": len(RUNS)}
    text = "\n".join(markdown(table, runs, 0.1, args))
    assert "python -m benchmarks.room --limit 1 -j 1" in text
    assert "benchmarks/results.md" in text
