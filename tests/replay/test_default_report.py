"""``tokenlean replay`` with no strategy named: per agent, none, the recommended stack and the
provider's clearing, priced by each session's model, in 100 columns, with a verdict to act on
and where the money went."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.cli.test_extras import run_without
from tests.data import NATIVE, shared_params
from tokenlean.cli import main
from tokenlean.replay import EtaProgress

#: Small real sessions of each agent (the whole folders take minutes on two cores).
CLAUDE = ["entireio_cli__04_0b015eb1c2_0_full.jsonl", "entireio_cli__28_a8bc758709_0_full.jsonl"]
CODEX = [
    "Python-AI-Solutions_agentic-neurodata-conversion__rollout-2025-09-26T19-38-50-"
    "0199865a-ee71-7ae3-b232-87583b038e9f.jsonl",
    "Python-AI-Solutions_agentic-neurodata-conversion__rollout-2025-09-29T17-33-37-"
    "0199955b-5deb-72e2-9988-4b1b799e1206.jsonl",
]
HAVE_NATIVE = all((NATIVE / "claude_code" / n).is_file() for n in CLAUDE) and all(
    (NATIVE / "codex" / n).is_file() for n in CODEX
)
MONEY = r"\$([\d,]+\.\d+)"


def _native(tmp_path: Path, *agents: str) -> Path:
    """A folder holding the small sessions of ``agents``, each in a folder of its own."""
    for agent in agents:
        (tmp_path / agent).mkdir()
        for name in CLAUDE if agent == "claude_code" else CODEX:
            shutil.copy(NATIVE / agent / name, tmp_path / agent / name)
    return tmp_path


def _total(out: str, strategy: str) -> tuple[str, str, str]:
    """The total block's billed input, whole bill (``$X (ratio)``) and recall of ``strategy``."""
    block = out.split("\nall ", 1)[1]
    row = next(line.split() for line in block.splitlines() if line.split()[:1] == [strategy])
    return " ".join(row[1:3]), " ".join(row[3:5]), row[-2]


def _usd(text: str) -> float:
    return float(text.replace(",", ""))


def test_the_default_report_on_the_bundled_runs_fits_and_its_verdict_is_its_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("genai_prices", reason="needs genai-prices (prices extra) for dollars")
    out_json = tmp_path / "r.json"
    args = ["replay", "-j", "1", "--model", "claude-sonnet-4-5", "--json", str(out_json)]
    assert main(args) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert all(len(line) <= 100 for line in out.splitlines()), out
    none_billed, none_whole, _ = _total(out, "none")
    _, mine_whole, mine_recall = _total(out, "recommended-anthropic")
    said = re.search(
        rf"would have saved {MONEY} of {MONEY} \(([\d.]+)%\), keeping ([\d.]+)% of what",
        " ".join(out.split()),
    )
    assert said is not None, out
    saved, of, share, kept = said.groups()
    base, mine = _usd(none_whole[1:].split()[0]), _usd(mine_whole[1:].split()[0])
    assert _usd(of) == base and abs(_usd(saved) - (base - mine)) <= 0.011
    assert float(share) == pytest.approx(100 * (1 - float(mine_whole.split("(")[1][:-1])), abs=0.06)
    assert float(kept) == pytest.approx(100 * float(mine_recall), abs=0.06)
    assert "Where the money went without middleware" in out
    # the parts add up to none's bill: the input parts to its billed input, all to the whole
    agent = json.loads(out_json.read_text())["agents"][0]
    parts, total = agent["where_the_money_went"], agent["total"]["none"]
    output = parts.pop("output (the agent's replies)")
    assert sum(parts.values()) == pytest.approx(total["billed"], abs=1e-4)
    assert sum(parts.values()) + output == pytest.approx(total["whole"], abs=1e-4)
    assert _usd(none_billed[1:].split()[0]) == round(total["billed"], 2)
    # not a terminal: no progress bar, one final line
    assert "\r" not in captured.err and "[#" not in captured.err
    # 5 bundled traces x (none, the recommended stack, Anthropic's server-side clearing)
    assert len(re.findall(r"^tokenlean: replayed 15 runs in ", captured.err, re.M)) == 1


@pytest.mark.parametrize("agent", shared_params(["claude_code", "codex"] if HAVE_NATIVE else []))
def test_the_default_report_on_real_sessions_gives_dollars_in_100_columns(
    agent: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("genai_prices", reason="needs genai-prices (prices extra) for dollars")
    folder = _native(tmp_path, agent) / agent
    assert main(["replay", "-j", "1", str(folder)]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 100 for line in out.splitlines()), out
    name = {"claude_code": "Claude Code", "codex": "Codex"}[agent]
    assert out.count(f"{name}: 2 sessions") == 1
    assert re.search(rf"On these 2 {name} sessions tokenlean \(recommended-", " ".join(out.split()))
    assert re.search(MONEY, out) and "all 2 sessions" in out
    clearing = "anthropic-clear-tool-uses" if agent == "claude_code" else None
    if clearing:  # its row, or a note saying it is not in this version
        assert f"  {clearing}" in out or f"({clearing}) is not in this version" in out


@pytest.mark.parametrize("mixed", shared_params([NATIVE] if HAVE_NATIVE else []))
def test_mixed_agents_get_a_report_each(
    mixed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _native(tmp_path, "claude_code", "codex")
    paths = [str(folder / "claude_code"), str(folder / "codex")]
    assert main(["replay", "-j", "1", *paths]) == 0
    out = capsys.readouterr().out
    assert out.count("Claude Code: 2 sessions") == 1 and out.count("Codex: 2 sessions") == 1
    assert "recommended-anthropic" in out.split("Codex: 2")[0]
    assert "recommended-openai" in out.split("Codex: 2")[1]
    assert len(re.findall(r"^On these 2 ", out, re.M)) == 2


@pytest.mark.parametrize("mixed", shared_params([NATIVE] if HAVE_NATIVE else []))
def test_by_source_groups_mixed_sessions_by_folder(
    mixed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It printed the table per session before, the same as without ``--by-source``."""
    folder = _native(tmp_path, "claude_code", "codex")
    paths = [str(folder / "claude_code"), str(folder / "codex")]
    assert main(["replay", "-j", "1", "-s", "none", "--by-source", *paths]) == 0
    out = capsys.readouterr().out
    rows = [line.split()[0] for line in out.split("\nsource ", 1)[1].splitlines()[2:4]]
    assert rows == ["claude_code", "codex"]


def test_a_png_chart_is_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("cairosvg", reason="needs CairoSVG (the chart extra)")
    chart = tmp_path / "c.png"
    assert main(["replay", "-j", "1", "-s", "none", "--chart", str(chart)]) == 0
    assert chart.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert f"chart written to {chart}" in capsys.readouterr().out


def test_a_png_chart_without_the_extra_fails_before_the_replay(tmp_path: Path) -> None:
    chart = tmp_path / "c.png"
    done = run_without(["cairosvg"], "replay", "-j", "1", "--chart", str(chart))
    assert done.returncode == 2, done.stderr
    assert "pip install 'tokenlean[chart]'" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not done.stdout
    assert not chart.exists()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_line_says_the_time_left_on_a_terminal_only() -> None:
    now = [0.0]
    term = _Terminal()
    progress = EtaProgress(100, stream=term, clock=lambda: now[0])
    now[0] = 10.0
    progress.step(25, "none")
    assert "25%" in term.getvalue() and "10.0s, about 30.0s left" in term.getvalue()
    log = io.StringIO()
    quiet = EtaProgress(100, stream=log, clock=lambda: now[0])
    quiet.step(50, "none")
    quiet.step(50, "none")
    quiet.finish("replayed 2 runs")
    assert log.getvalue() == "tokenlean: replayed 2 runs in 0.0s\n"
