"""The README's "Use it with any agent" figures are those of the benchmark files they cite."""

from __future__ import annotations

from tests.data import ROOT


def _rows(text: str, first: str) -> dict[str, list[str]]:
    """Markdown table rows by their first cell (bold marks dropped), for the table whose header
    starts with ``first``."""
    start = text.index(first)
    rows: dict[str, list[str]] = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def test_savings_table_is_the_benchmarks() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Use it with any agent") :]
    shown = _rows(section, "| source | runs | calls | billed (Anthropic)")
    bench = _rows((ROOT / "benchmarks" / "raw_savings.md").read_text(encoding="utf-8"), "| source")
    assert shown.keys() == bench.keys()
    for source, cells in shown.items():
        runs, calls, a_mw, _, a_raw, _, _, _, _, _, o_raw, _, sent, _, _, recall, _, breaks = bench[
            source
        ]
        assert cells == [runs, calls, a_raw, o_raw, sent, recall, breaks, a_mw], source
