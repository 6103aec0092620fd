"""``tokenlean shorten``: a file or standard input in, shortened text out."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from tokenlean.cli import main

LOG = "\n".join(
    [
        *(f"worker {i}: fetched page {i * 3} of the catalogue in {i % 9} ms" for i in range(200)),
        "worker 200: fetched page 600 of the catalogue via slow_mirror in 2 ms",
        *(
            f"worker {i}: fetched page {i * 3} of the catalogue in {i % 9} ms"
            for i in range(201, 400)
        ),
        "Traceback (most recent call last):",
        '  File "/srv/app.py", line 9, in <module>',
        "    fetch()",
        "TimeoutError: catalogue did not answer",
        "exit status 1",
    ]
)


def test_shortens_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "run.log"
    path.write_text(LOG)
    assert main(["shorten", str(path), "--query", "slow_mirror", "-n", "80", "--stats"]) == 0
    out, err = capsys.readouterr()
    assert "TimeoutError: catalogue did not answer" in out and "exit status 1" in out
    assert "worker 200: fetched page 600 of the catalogue via slow_mirror in 2 ms" in out
    assert "(input lines " in out and len(out) < len(LOG) // 5
    assert err.startswith("tokenlean shorten: log, ~") and "lines omitted" in err


def test_reads_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LOG.encode() + b"\xff")))
    assert main(["shorten"]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("worker 0:") and "TimeoutError" in out and out.endswith("\ufffd")


def test_bad_input_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["shorten", str(tmp_path / "missing.log")]) == 2
    assert main(["shorten", "-n", "0", str(tmp_path)]) == 2
    assert "tokenlean shorten:" in capsys.readouterr().err
