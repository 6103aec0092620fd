"""benchmarks.loso: the pick for each held-out source, or agent family, uses only the others."""

from __future__ import annotations

from typing import Any

import pytest
from benchmarks._common import DATA
from benchmarks.loso import (
    FAMILIES,
    Rules,
    by_family,
    family_of,
    figures,
    leave_one_family_out,
    leave_one_out,
    markdown,
    pick,
)

from tokenlean.replay._metrics import RunMetrics
from tokenlean.replay._runner import ReplayReport

# (strategy, source): (tokens, billed, refs, retained); "none" keeps all 200 refs everywhere.
ROWS = {
    ("x", "a"): (50, 50.0, 200, 180),  # cheap, but loses 10% of a's references
    ("x", "b"): (60, 60.0, 200, 200),
    ("x", "c"): (70, 70.0, 200, 200),
    ("y", "a"): (90, 90.0, 200, 200),
    ("y", "b"): (90, 90.0, 200, 200),
    ("y", "c"): (100, 101.0, 200, 200),  # bills above none on c
}


def _report() -> ReplayReport:
    runs = []
    for source in "abc":
        runs.append(_run("none", source, (100, 100.0, 200, 200)))
        runs += [_run(name, source, ROWS[name, source]) for name in "xy"]
    return ReplayReport(["none", "x", "y"], runs, "test")


def _run(name: str, source: str, row: tuple[int, float, int, int]) -> RunMetrics:
    tokens, billed, refs, kept = row
    return RunMetrics(
        strategy=name,
        trajectory=f"{source}-1",
        source=source,
        calls=1,
        tokens_sent=tokens,
        billed_anthropic=billed,
        refs_total=refs,
        refs_retained=kept,
    )


def test_each_fold_picks_on_the_other_sources_only() -> None:
    folds = {f.held_out: f for f in leave_one_out(_report(), ["x", "y"], Rules())}
    # a held out: x is fine on b and c and cheapest; on a it loses references
    assert folds["a"].pick == "x" and folds["a"].eligible == 1  # y bills above none on c
    assert folds["a"].tuned.billed == pytest.approx(130 / 200)
    assert folds["a"].held.recall == pytest.approx(0.9)
    assert folds["a"].held.broken == ("recall 0.900 on a",)
    # b held out: x breaks recall on a, y bills above none on c: nothing qualifies
    assert folds["b"].pick == "none" and folds["b"].eligible == 0
    # c held out: y qualifies on a and b, then bills above none on c
    assert folds["c"].pick == "y"
    assert folds["c"].held.broken == ("billed above none on c",)


def test_rules_are_configurable_and_checked() -> None:
    report = _report()
    assert pick(report, ["x", "y"], ["a", "b", "c"], Rules())[0] == "none"
    lenient = Rules(floor=0.85, pooled_floor=0.9)
    assert figures(report, "x", ["a", "b", "c"], lenient).broken == ()
    assert pick(report, ["x", "y"], ["a", "b"], lenient)[0] == "x"
    few_refs = Rules(min_refs=201)  # no source has enough references to judge recall by
    assert figures(report, "x", ["a"], few_refs, pooled_rule=False).broken == ()
    with pytest.raises(ValueError, match="floor"):
        Rules(floor=1.5)


def test_when_in_doubt_the_pick_keeps_more_on_its_worst_source() -> None:
    rows = {
        ("cheap", "a"): (80, 80.0, 200, 195),  # worst recall 0.975
        ("cheap", "b"): (80, 80.0, 200, 200),
        ("keeps", "a"): (80, 80.8, 200, 199),  # 0.004 dearer pooled, worst recall 0.995
        ("keeps", "b"): (80, 80.0, 200, 200),
    }
    runs = [_run("none", s, (100, 100.0, 200, 200)) for s in "ab"]
    runs += [_run(n, s, rows[n, s]) for n in ("cheap", "keeps") for s in "ab"]
    report = ReplayReport(["none", "cheap", "keeps"], runs, "test")
    assert pick(report, ["cheap", "keeps"], ["a", "b"], Rules())[0] == "keeps"
    assert pick(report, ["cheap", "keeps"], ["a", "b"], Rules(keep_within=0.003))[0] == "cheap"
    assert pick(report, ["cheap", "keeps"], ["a", "b"], Rules(keep_within=0.0))[0] == "cheap"
    with pytest.raises(ValueError, match="keep_within"):
        Rules(keep_within=-0.1)


def test_keeping_on_every_source_picks_where_recall_stops_rising() -> None:
    """Three sizes of a keep-whole limit: the worst source (b) cannot tell them apart, but a
    keeps more up to the middle one; "every" picks it, "worst" the cheapest."""
    rows = {
        ("small", "a"): (80, 80.0, 400, 396),
        ("small", "b"): (80, 80.0, 200, 198),  # b: the worst source, the same for all three
        ("middle", "a"): (85, 85.0, 400, 399),
        ("middle", "b"): (85, 85.0, 200, 198),
        ("large", "a"): (90, 90.0, 400, 400),  # one more reference: within one of the middle
        ("large", "b"): (90, 90.0, 200, 198),
    }
    names = ["small", "middle", "large"]
    runs = [_run("none", s, (100, 100.0, rows["small", s][2], rows["small", s][2])) for s in "ab"]
    runs += [_run(n, s, rows[n, s]) for n in names for s in "ab"]
    report = ReplayReport(["none", *names], runs, "test")
    rules = Rules(floor=0.9, keep_within=0.2)
    assert pick(report, names, ["a", "b"], rules)[0] == "small"
    assert pick(report, names, ["a", "b"], Rules(floor=0.9, keep_within=0.2, keep="every"))[0] == (
        "middle"
    )
    with pytest.raises(ValueError, match="keep must be one of"):
        Rules(keep="best")


# Two Claude Code sources, one SWE agent, one source in no family; "none" keeps all 200 refs.
FAMILY_ROWS = {
    ("x", "entire_claude_code"): (50, 50.0, 200, 180),  # cheap, loses 10% on one Claude Code
    ("x", "openagents_claude_code"): (50, 50.0, 200, 200),
    ("x", "sweagent"): (60, 60.0, 200, 200),
    ("x", "mystery"): (70, 70.0, 200, 200),
    ("y", "entire_claude_code"): (90, 90.0, 200, 200),
    ("y", "openagents_claude_code"): (90, 90.0, 200, 200),
    ("y", "sweagent"): (90, 90.0, 200, 200),
    ("y", "mystery"): (90, 90.0, 200, 200),
}
FAMILY_SOURCES = ("entire_claude_code", "openagents_claude_code", "sweagent", "mystery")


def _family_report() -> ReplayReport:
    runs = [_run("none", s, (100, 100.0, 200, 200)) for s in FAMILY_SOURCES]
    runs += [_run(n, s, FAMILY_ROWS[n, s]) for n in "xy" for s in FAMILY_SOURCES]
    return ReplayReport(["none", "x", "y"], runs, "test")


def test_a_family_is_held_out_whole() -> None:
    report = _family_report()
    folds = leave_one_family_out(report, ["x", "y"], Rules())
    assert [(f.family, f.held_out) for f in folds] == [
        ("claude_code", "entire_claude_code"),
        ("claude_code", "openagents_claude_code"),
        ("mystery", "mystery"),
        ("swe_agents", "sweagent"),
    ]
    for fold in folds:
        family = {s for s in FAMILY_SOURCES if family_of(s) == fold.family}
        assert fold.held_out in family
        assert set(fold.tuned_on) == set(FAMILY_SOURCES) - family
    claude = [f for f in folds if f.family == "claude_code"]
    # on sweagent and mystery alone x is the cheapest eligible: it never saw entire_claude_code
    assert {f.pick for f in claude} == {"x"}
    assert claude[0].held.broken == ("recall 0.900 on entire_claude_code",)
    assert claude[1].held.broken == ()
    assert claude[0].tuned.billed == pytest.approx(130 / 200)
    # leaving one source out, openagents_claude_code's fold sees entire_claude_code: y is picked
    by_source = {f.held_out: f for f in leave_one_out(report, ["x", "y"], Rules())}
    assert by_source["openagents_claude_code"].pick == "y"
    assert "entire_claude_code" in by_source["openagents_claude_code"].tuned_on


def test_the_family_pick_is_made_without_the_family(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, ...]] = []

    def spy(result: ReplayReport, candidates: Any, sources: Any, rules: Rules) -> Any:
        seen.append(tuple(sources))
        return pick(result, candidates, sources, rules)

    monkeypatch.setattr("benchmarks.loso.pick", spy)
    leave_one_family_out(_family_report(), ["x", "y"], Rules())
    assert sorted(seen) == [
        ("entire_claude_code", "mystery", "openagents_claude_code"),  # swe_agents held out
        ("entire_claude_code", "openagents_claude_code", "sweagent"),  # mystery held out
        ("mystery", "sweagent"),  # claude_code held out
    ]


def test_an_unknown_source_is_its_own_family() -> None:
    assert family_of("mystery") == "mystery"
    assert family_of("codex_desktop_0144") == "codex"
    assert by_family(["sweagent", "zzz", "tau2_retail_gpt41", "miniswe_deepseek"]) == {
        "customer_service": ["tau2_retail_gpt41"],
        "swe_agents": ["sweagent", "miniswe_deepseek"],
        "zzz": ["zzz"],
    }
    # one family only: nothing is left to pick on, so no fold
    report = _family_report()
    claude = {"everything": FAMILY_SOURCES}
    assert leave_one_family_out(report, ["x", "y"], Rules(), claude) == []


def test_every_shared_source_is_in_one_family() -> None:
    named = [s for members in FAMILIES.values() for s in members]
    assert len(named) == len(set(named))
    if not DATA.is_dir():
        pytest.skip(f"no shared trajectories at {DATA}")
    assert {p.name for p in DATA.iterdir() if p.is_dir()} <= set(named)


def test_the_markdown_has_a_table_per_kind_of_fold() -> None:
    report = _family_report()
    both = markdown(report, ["x", "y"], Rules(), "cmd", "0 s")
    assert both.startswith("# Leave one source out, and one agent family out\n")
    assert "## One source held out" in both and "## One agent family held out" in both
    assert "claude_code: entire_claude_code, openagents_claude_code" in both
    assert "| family | held out | refs | pick |" in both
    assert "| claude_code | entire_claude_code | 200 | `x` | 2 |" in both
    assert "| mystery | mystery | 200 |" in both
    family = markdown(report, ["x", "y"], Rules(), "cmd", "0 s", by="family")
    assert family.startswith("# Leave one agent family out\n")
    assert "| held out | refs |" not in family.replace("| family | held out", "")
    source = markdown(report, ["x", "y"], Rules(), "cmd", "0 s", by="source")
    assert source.startswith("# Leave one source out\n") and "| family |" not in source
    assert "## One source held out" not in source
    with pytest.raises(ValueError, match="by"):
        markdown(report, ["x", "y"], Rules(), "cmd", "0 s", by="families")
