"""benchmarks.diagnose_recall: its lost references and cost split agree with the replay metrics."""

from __future__ import annotations

import json

import pytest
from benchmarks.diagnose_recall import diagnose, marker_tokens

from tokenlean.replay._bundled import bundled_paths
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._runner import run_replay, shared_measurer
from tokenlean.shorten import Retrieval, shorten

SAMPLE = "reasoner_dev__sqlfluff__sqlfluff-1763"  # a bundled run where shortening still loses a few


def test_every_kind_of_marker_is_counted() -> None:
    record = {"items": [{"id": f"{i:010d}", "price": i * 1.5} for i in range(200)]}
    where = Retrieval("o123456", "read_original")
    crushed = shorten(json.dumps(record), retrieval=where, max_tokens=60)
    assert crushed.kind == "json" and crushed.changed
    log = "\n".join(f"step {i} value {i * 7}" for i in range(300))
    cut = shorten(log, retrieval=where, max_tokens=60)
    measurer = shared_measurer()
    for report in (crushed, cut):
        markers = report.text.count("omitted")
        assert markers >= 1
        found = marker_tokens(report.text, measurer)
        assert found >= 8 * markers  # each marker is a dozen tokens or so, hint included
        assert found < measurer.counter.count(report.text)


@pytest.mark.parametrize("strategy", ["shorten-with-tool"])
def test_diagnosis_matches_the_replay(strategy: str) -> None:
    path = next(p for p in bundled_paths() if p.stem == SAMPLE)
    found = diagnose(path, [strategy])
    result = run_replay([load_trajectory(path)], ["none", strategy], jobs=1)
    none, run = result.pooled["none"], result.pooled[strategy]
    assert len(found.lost) == run.refs_total - run.refs_retained > 0
    assert all(x.state == "shortened" and x.reason for x in found.lost)
    (split,) = found.splits
    net = split.schema_tokens + split.marker_tokens - split.cut_tokens + split.other_tokens
    assert net == run.tokens_sent - none.tokens_sent
    billed = split.schema_billed + split.marker_billed - split.cut_billed + split.other_billed
    assert billed == pytest.approx(run.billed_anthropic - none.billed_anthropic)
    assert split.cut_tokens > split.marker_tokens > 0
