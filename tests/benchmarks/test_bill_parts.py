"""benchmarks.bill_parts: a row's parts add up to the bill the room measures for it, the oracle
bills what is not tool output exactly as no middleware does, and each result is billed under
its own tool's name."""

from __future__ import annotations

import argparse
from collections import Counter

import pytest
from benchmarks._common import measurer
from benchmarks.bill_parts import (
    FIXED,
    OWN,
    ROWS,
    SCHEMAS,
    Parts,
    billed_parts,
    markdown,
    measure_one,
    part_of,
    pooled,
)
from benchmarks.room import oracle_trajectory

from tests.data import BUNDLED
from tokenlean.langchain import recommended_middleware
from tokenlean.replay._engine import replay
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._raw import measure_bodies
from tokenlean.transcript import Message, ToolCall

RUNS = [  # two bundled runs: one short, one with long outputs
    BUNDLED / "sweagent" / "demo__ctf_web__i_got_id_demo.json",
    BUNDLED / "miniswe_deepseek" / "chat_test__django__django-11001.json",
]


@pytest.fixture(scope="module")
def measured() -> list[tuple[str, Parts]]:
    return [measure_one(str(path)) for path in RUNS]


def test_a_rows_parts_add_up_to_the_bill_the_room_measures(
    measured: list[tuple[str, Parts]],
) -> None:
    for path, (_, parts) in zip(RUNS, measured, strict=True):
        trajectory = load_trajectory(path)
        rows = {
            "none": (trajectory, []),
            "oracle": (oracle_trajectory(trajectory), []),
            "recommended": (trajectory, recommended_middleware("anthropic")),
        }
        for row, (edited, middleware) in rows.items():
            run = measure_bodies(trajectory, replay(edited, middleware), measurer(), strategy=row)
            assert sum(parts[row].values()) == pytest.approx(run.billed_anthropic), (path, row)


def test_the_oracle_bills_what_is_not_tool_output_as_none_does(
    measured: list[tuple[str, Parts]],
) -> None:
    for _, parts in measured:
        for part in FIXED:
            assert parts["oracle"][part] == pytest.approx(parts["none"][part]), part
        results = [p for p in parts["none"] if p not in FIXED]
        assert results
        for part in results:
            assert parts["oracle"][part] <= parts["none"][part] + 1e-9, part
        assert sum(parts["oracle"][p] for p in results) < sum(parts["none"][p] for p in results)


def test_a_result_is_billed_under_its_calls_tool() -> None:
    names = {"c1": "open"}
    assert (
        part_of(Message(role="tool", content="x", tool_call_id="c1"), names) == "results of `open`"
    )
    assert part_of(Message(role="tool", content="x", name="cat"), {}) == "results of `cat`"
    turn = Message(role="assistant", content="", tool_calls=(ToolCall("c1", "open", {}),))
    assert part_of(turn, names) == OWN


def test_a_block_in_the_shared_prefix_is_billed_at_the_cached_price() -> None:
    first = (("s", "a"), (100, 10), (SCHEMAS, "x"))
    second = (("s", "a", "b"), (100, 10, 20), (SCHEMAS, "x", "x"))
    broken = (("s", "c"), (100, 30), (SCHEMAS, "x"))
    parts = billed_parts([first, second, broken])
    assert parts[SCHEMAS] == pytest.approx(125 + 10 + 10)
    assert parts["x"] == pytest.approx(12.5 + (1 + 25) + 37.5)


def test_the_report_has_a_summary_and_a_table_per_source(
    measured: list[tuple[str, Parts]],
) -> None:
    table = pooled(measured)
    assert list(table) == ["miniswe_deepseek", "sweagent", "(all)"]
    for row in ROWS:
        pooled_parts = table["(all)"][row]
        for part in {*table["miniswe_deepseek"][row], *table["sweagent"][row]}:
            alone = table["miniswe_deepseek"][row].get(part, 0) + table["sweagent"][row].get(
                part, 0
            )
            assert pooled_parts[part] == pytest.approx(alone), (row, part)
    args = argparse.Namespace(directory="d", jobs=2, limit=0)
    runs = Counter({"miniswe_deepseek": 1, "sweagent": 1, "(all)": 2})
    text = "\n".join(markdown(table, runs, 0.1, args))
    assert "## sweagent" in text and "## miniswe_deepseek" in text and "## (all)" not in text
    assert "| (all) | 2 |" in text
