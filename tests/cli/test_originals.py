"""``tokenlean originals prune``, and the proxy's limits on the originals folder, from the command
line: real files, real folders."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pytest

from tokenlean.cli import main
from tokenlean.cli._originals import parse_age, parse_size
from tokenlean.cli._proxy import build_app

DAY = 86400.0


def _file(folder: Path, number: int, size: int, age: float) -> Path:
    """An original's file of ``size`` bytes, last used ``age`` seconds ago."""
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"o{number:012d}.txt"
    path.write_text("x" * size)
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_prune_deletes_past_the_limits_and_says_what_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    month_old = _file(tmp_path, 1, 1000, 30 * DAY)
    day_old = [_file(tmp_path, n, 1000, DAY - n) for n in range(2, 6)]
    other = tmp_path / "notes.txt"  # not an original's name: never touched
    other.write_text("mine")
    os.utime(other, (0, 0))

    assert main(["originals", "prune", "--dir", str(tmp_path), "--max-bytes", "2500"]) == 0

    out = capsys.readouterr().out
    assert out == f"removed 3 originals (3,000 bytes) from {tmp_path}; 2 kept (2,000 bytes)\n"
    assert not month_old.exists()
    assert [p.exists() for p in day_old] == [False, False, True, True]  # the oldest went first
    assert other.exists()


def test_prune_with_an_age_limit_and_a_dry_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, recent = _file(tmp_path, 1, 10, 3 * DAY), _file(tmp_path, 2, 10, 0.5 * DAY)
    command = ["originals", "prune", "--dir", str(tmp_path), "--max-age", "1d"]

    assert main([*command, "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("would remove 1 originals (10 bytes)")
    assert old.exists()

    assert main(command) == 0
    assert capsys.readouterr().out.startswith("removed 1 originals (10 bytes)")
    assert (old.exists(), recent.exists()) == (False, True)


def test_prune_of_a_folder_that_does_not_exist_removes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["originals", "prune", "--dir", str(tmp_path / "none")]) == 0
    assert capsys.readouterr().out.startswith("removed 0 originals (0 bytes)")


def test_limits_below_the_grace_period_are_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["originals", "prune", "--dir", str(tmp_path), "--max-age", "5m"]) == 2
    assert "max_age must be a finite number >= 600" in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_a_folder_another_user_owns_is_refused_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir()
    os.chown(folder, 65534, 65534)

    assert main(["originals", "prune", "--dir", str(folder)]) == 2
    assert "belongs to another user (uid 65534)" in capsys.readouterr().err
    assert main(["proxy", "--originals", str(folder), "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tokenlean proxy: the originals folder") and "Traceback" not in err


def test_the_proxy_takes_the_limits(tmp_path: Path) -> None:
    from tokenlean.cli import build_parser

    limits = ["--originals-max-bytes", "64M", "--originals-max-age", "2d"]
    args = build_parser().parse_args(["proxy", "--originals", str(tmp_path), *limits])
    app = build_app(args, "proxy")

    assert app is not None
    settings = app.state.settings
    assert (settings.originals_max_bytes, settings.originals_max_age) == (64 * 2**20, 2 * DAY)


def test_a_bad_size_is_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["proxy", "--originals-max-bytes", "lots"])
    assert exit_.value.code == 2
    assert "a size such as 1G" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "size"),
    [("1048576", 2**20), ("1G", 2**30), ("500M", 500 * 2**20), ("2GiB", 2**31), ("1.5k", 1536)],
)
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "seconds"), [("3600", 3600.0), ("7d", 7 * DAY), ("12h", 43200.0), ("30m", 1800.0)]
)
def test_ages(text: str, seconds: float) -> None:
    assert parse_age(text) == seconds


@pytest.mark.parametrize("text", ["", "1X", "-5", "d"])
def test_bad_ages(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        parse_age(text)
