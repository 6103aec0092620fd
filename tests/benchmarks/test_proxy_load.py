"""A new run of the load benchmark keeps what was written by hand after the generated part."""

from __future__ import annotations

from pathlib import Path

from benchmarks.proxy_load import kept_notes

ROOT = Path(__file__).resolve().parents[2]


def test_the_hand_written_sections_after_the_generated_part_are_kept(tmp_path: Path):
    path = tmp_path / "load.md"
    assert kept_notes(path) == ""
    generated = "# Title\n\n| a |\n\nMachine: x86_64, Python 3.11.\nSecond line.\n"
    path.write_text(generated, encoding="utf-8")
    assert kept_notes(path) == ""
    path.write_text(generated + "\n## Before and after\n\nBy hand.\n", encoding="utf-8")
    assert kept_notes(path) == "\n## Before and after\n\nBy hand.\n"
    assert generated + kept_notes(path) == path.read_text(encoding="utf-8")


def test_the_committed_file_keeps_its_before_and_after_section():
    notes = kept_notes(ROOT / "benchmarks" / "proxy_load.md")
    assert notes.startswith("\n## The cold large body before and after")
