"""benchmarks.adapters: every row measures the same calls, and a new row is one entry."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai", reason="the pydantic-ai row needs the pydantic-ai extra")
pytest.importorskip("agentscope", reason="the AgentScope rows need the agentscope extra")

from benchmarks.adapters import (
    ADAPTERS,
    APIS,
    REFERENCE,
    Adapter,
    Report,
    baseline_key,
    call_mismatches,
    langchain_plain,
    measure_one,
    pooled,
    ratio,
)

from benchmarks import adapters
from tests.data import BUNDLED

RUNS = [  # two bundled runs: one short, one with long outputs and inputs to cut
    BUNDLED / "sweagent" / "demo__ctf_web__i_got_id_demo.json",
    BUNDLED
    / "sweagent"
    / "test__gpt4__swe-bench-dev-easy_first_only__default__pydicom__pydicom-1458.json",
]


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> list[adapters.Measured]:
    originals = tmp_path_factory.mktemp("originals")
    return [measure_one(str(path), str(originals)) for path in RUNS]


def test_every_row_measured_the_same_calls(measured: list[adapters.Measured]) -> None:
    assert call_mismatches(measured) == []
    for m in measured:
        calls = {name: row.calls for name, row in m.rows.items() if not row.error}
        assert len(set(calls.values())) == 1, calls
        assert set(ADAPTERS) <= set(m.rows)
        assert all(not m.rows[f"{name} w/o tool"].error for name in ADAPTERS)


def test_the_raw_rewrite_and_pydantic_ai_keep_the_prefix(measured: list[adapters.Measured]) -> None:
    table = pooled(measured)["(all)"]
    assert table["raw-anthropic"].prefix_breaks == 0
    for name in [*(f"raw-{api}" for api in APIS), "pydantic-ai", "agentscope", REFERENCE]:
        assert table[name].prefix_breaks == 0, name
        assert ratio(table, name, "billed_anthropic") < 1.0, name  # the long run saves


def test_baselines_agree_across_frameworks(measured: list[adapters.Measured]) -> None:
    """pydantic-ai and AgentScope with nothing of tokenlean are sent what LangChain with no
    middleware is sent."""
    table = pooled(measured)["(all)"]
    langchain, pydantic = table["none langchain anthropic"], table["none pydantic-ai anthropic"]
    assert pydantic.tokens_sent == pytest.approx(langchain.tokens_sent, rel=1e-3)
    assert pydantic.refs_total == langchain.refs_total
    agentscope = table["none agentscope anthropic"]
    assert agentscope.tokens_sent == pytest.approx(langchain.tokens_sent, rel=1e-2)
    assert agentscope.refs_total == langchain.refs_total


def test_every_framework_offers_the_tool_by_one_rule(measured: list[adapters.Measured]) -> None:
    """pydantic-ai and AgentScope list read_original by the rule LangChain's stack starts
    with (a negligible share of the first prompt): on these runs, where the loop guard ends
    nothing early, they bill as it does."""
    table = pooled(measured)["(all)"]
    for name in ("pydantic-ai", "agentscope", "agentscope-shortener"):
        ours, langchain = (ratio(table, n, "billed_anthropic") for n in (name, "langchain"))
        assert abs(ours - langchain) <= adapters.TOLERANCE, name


def test_a_new_adapter_is_one_entry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The plug-in point: a replay function in the table is a row."""
    monkeypatch.setitem(ADAPTERS, "echo", Adapter(langchain_plain, label="no-op"))
    m = measure_one(str(RUNS[0]), str(tmp_path), names=["echo"])
    assert set(m.rows) == {"echo", "echo w/o tool", baseline_key(ADAPTERS["echo"])}
    table = pooled([m])["(all)"]
    assert ratio(table, "echo", "billed_anthropic") == 1.0
    assert table["echo"].prefix_breaks == 0


def test_the_report_names_every_row(measured: list[adapters.Measured]) -> None:
    args = argparse.Namespace(limit=0, jobs=1, originals="/tmp/o", directory="x")
    text = "\n".join(Report(measured, 0.1, args).markdown())
    assert all(name in text for name in ADAPTERS)
    assert "python -m benchmarks.adapters" in text
