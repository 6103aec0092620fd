"""benchmarks.loso: the pick for each held-out source uses only the other sources."""

from __future__ import annotations

import pytest
from benchmarks.loso import Rules, figures, leave_one_out, pick

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
