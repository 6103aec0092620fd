"""benchmarks.shorten_throughput --parts: the counter's and the keyword scans' parts are timed
while the files are shortened, add up to no more than the whole, and the timing is undone after."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from benchmarks.shorten_throughput import print_parts

from tokenlean import shorten
from tokenlean.shorten._text import Lines
from tokenlean.tokens import EstimateCounter


def test_parts_are_timed_and_add_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "run.log"
    log.write_text(
        "".join(f"test_{i} PASSED\n" for i in range(3000)) + "ERROR: boom in test_7\n",
        encoding="utf-8",
    )
    originals = (EstimateCounter.count, Lines.find_all)
    print_parts([log], repeat=2)
    assert (EstimateCounter.count, Lines.find_all) == originals
    out = capsys.readouterr().out
    found = re.findall(r"^(whole|token counter|keyword scans|the rest): ([0-9.]+) ms", out, re.M)
    ms = {name: float(value) for name, value in found}
    assert len(ms) == 4
    assert ms["token counter"] > 0 and ms["keyword scans"] > 0  # both ran while timed
    parts = ms["token counter"] + ms["keyword scans"] + ms["the rest"]
    assert parts == pytest.approx(ms["whole"], abs=0.15)  # each figure is rounded to 0.1
    assert shorten(log.read_text(encoding="utf-8")).changed  # the log is one a pass shortens
