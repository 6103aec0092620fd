"""Per-source reporting: each run belongs to the source named by its folder; ratios per source."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from tests.data import TRAJECTORIES
from tokenlean.cli import main
from tokenlean.cost import OPENAI_PAID_WRITES
from tokenlean.replay import _report as report
from tokenlean.replay._bundled import bundled_paths
from tokenlean.replay._formats import load_trajectory, parse_trajectory
from tokenlean.replay._refs import learned_references
from tokenlean.replay._runner import ReplayReport, run_replay

NAMES = ["none", "shorten"]


@pytest.fixture(scope="module")
def bundled() -> ReplayReport:
    trajectories = [load_trajectory(p) for p in bundled_paths()]
    return run_replay(trajectories, NAMES, jobs=2)


def test_source_name_is_the_folder_unless_given(tmp_path: Path) -> None:
    folder = tmp_path / "my_agent"
    folder.mkdir()
    path = folder / "run.json"
    path.write_text(json.dumps([{"role": "user", "content": "x"}]))
    assert load_trajectory(path).source_name == "my_agent"
    assert load_trajectory(path, source_name="other").source_name == "other"
    assert parse_trajectory([{"role": "user", "content": "x"}]).source_name == ""
    assert {load_trajectory(p).source_name for p in bundled_paths()} == {
        "miniswe_deepseek",
        "sweagent",
    }


def test_source_rows_partition_the_pooled_rows(bundled: ReplayReport) -> None:
    assert not bundled.errors()
    assert list(bundled.by_source) == ["miniswe_deepseek", "sweagent"]
    for name in NAMES:
        parts = [rows[name] for rows in bundled.by_source.values()]
        whole = bundled.pooled[name]
        assert sum(p.calls for p in parts) == whole.calls
        assert sum(p.tokens_sent for p in parts) == whole.tokens_sent
        assert sum(p.refs_total for p in parts) == whole.refs_total
        assert sum(p.refs_retained for p in parts) == whole.refs_retained
        assert all(p.source == s for p, s in zip(parts, bundled.by_source, strict=True))


def test_ratios_are_against_none_of_the_same_source(bundled: ReplayReport) -> None:
    billed: dict[tuple[str, str], float] = defaultdict(float)
    for run in bundled.runs:
        billed[run.source, run.strategy] += run.billed_anthropic
    ratios = {s: billed[s, "shorten"] / billed[s, "none"] for s in bundled.by_source}
    printed = {r[0]: r[5] for r in report.source_rows(bundled) if r[1] == "shorten"}
    assert printed == {s: f"{v:.3f}" for s, v in ratios.items()}
    assert len(set(printed.values())) == 2  # the two sources really differ
    worst = report.worst_sources(bundled)["shorten"]
    assert worst.billed_source == max(ratios, key=lambda s: ratios[s])
    assert worst.billed_anthropic == pytest.approx(max(ratios.values()))


def test_recall_is_judged_only_on_sources_with_enough_references(bundled: ReplayReport) -> None:
    refs = {s: rows["none"].refs_total for s, rows in bundled.by_source.items()}
    floor = sorted(refs.values())[-1]  # only the source with the most references qualifies
    worst = report.worst_sources(bundled, min_refs=floor)["shorten"]
    assert worst.recall_sources == 1
    assert worst.recall_source == max(refs, key=lambda s: refs[s])
    assert worst.recall == bundled.by_source[worst.recall_source]["shorten"].recall
    none_qualify = report.worst_sources(bundled, min_refs=floor + 1)["shorten"]
    assert none_qualify.recall_source is None and none_qualify.recall_sources == 0
    assert "no source with" in report.worst_source_lines(bundled, min_refs=floor + 1)[0]


def test_json_holds_the_source_rows(bundled: ReplayReport) -> None:
    data = report.to_json(bundled)
    entries = {(e["source"], e["strategy"]): e for e in data["by_source"]}
    assert set(entries) == {(s, n) for s in bundled.by_source for n in NAMES}
    for source in bundled.by_source:
        assert entries[source, "none"]["relative"]["billed_anthropic"] == 1.0
        assert entries[source, "shorten"]["refs_total"] > 0
    assert data["worst_source"]["shorten"]["billed_source"] in bundled.by_source
    assert {r["source"] for r in data["runs"]} == set(bundled.by_source)


def test_a_saved_report_reads_back(bundled: ReplayReport) -> None:
    data = json.loads(json.dumps(report.to_json(bundled)))
    again = report.from_json(data)
    assert report.source_rows(again) == report.source_rows(bundled)
    assert report.text_table(again) == report.text_table(bundled)
    assert report.source_matrix(again) == report.source_matrix(bundled)
    assert "| shorten | " in report.source_matrix(again)
    # each call's tokens come back: a saved replay prices again under any table
    for saved, run in zip(again.runs, bundled.runs, strict=True):
        assert saved.call_tokens == run.call_tokens and len(run.call_tokens) == run.calls
        assert saved.billed_under(OPENAI_PAID_WRITES) == run.billed_under(OPENAI_PAID_WRITES)


def test_cli_prints_a_table_per_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "-s", "shorten", "-j", "2", "--by-source", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "| source | strategy | runs |" in out
    assert "| sweagent | shorten | 2 |" in out and "| miniswe_deepseek | none | 3 |" in out
    assert "- worst source for shorten: billed" in out
    assert main(["replay", "-s", "none", "-j", "1"]) == 0
    assert "source" not in capsys.readouterr().out.split("tokens counted")[0]


SMALL = {
    "reflexion_hotpotqa_react": 2,
    "tau2_retail_gpt41": 2,
}


def _has_references(path: Path) -> bool:
    return any(turn.refs for turn in learned_references(load_trajectory(path).messages))


@pytest.mark.skipif(not TRAJECTORIES.is_dir(), reason="needs ../shared/data/trajectories")
def test_real_replays_from_two_shared_sources() -> None:
    paths: list[Path] = []
    for source, count in SMALL.items():
        files = sorted((TRAJECTORIES / source).glob("*.json"), key=lambda p: p.stat().st_size)
        paths += [p for p in files if _has_references(p)][:count]
    result = run_replay([load_trajectory(p) for p in paths], NAMES, jobs=2)
    assert not result.errors()
    assert list(result.by_source) == sorted(SMALL)
    for source, rows in result.by_source.items():
        assert {r.trajectory for r in result.runs if r.source == source} == {
            p.stem for p in paths if p.parent.name == source
        }
        assert rows["none"].recall == 1.0 and rows["none"].refs_total > 0
        assert rows["shorten"].calls == rows["none"].calls
    section = report.by_source_section(result)
    assert all(s in section for s in SMALL) and "worst source for shorten" in section
