"""The whole bill: input billed with caching plus the output at the provider's output price."""

from __future__ import annotations

import pytest

from tokenlean.cli import main
from tokenlean.cost import ANTHROPIC, OPENAI, CachePricing
from tokenlean.replay._bundled import bundled_paths
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._metrics import PromptMeasurer, RunMetrics, relative, whole_bill
from tokenlean.replay._runner import run_replay
from tokenlean.tokens import default_counter


def _row(billed: float, output: int) -> RunMetrics:
    return RunMetrics("s", "t", billed_anthropic=billed, billed_openai=billed, output_tokens=output)


def test_the_whole_bill_prices_output_per_provider() -> None:
    base, row = _row(1000, 100), _row(500, 100)
    assert whole_bill(base, ANTHROPIC) == 1000 + 5 * 100
    assert whole_bill(base, OPENAI) == 1000 + 4 * 100
    ratios = relative(row, base)
    assert ratios["billed_anthropic"] == 0.5
    assert ratios["whole_anthropic"] == pytest.approx(1000 / 1500)
    assert ratios["whole_openai"] == pytest.approx(900 / 1400)
    # a cut of the input saves less of the whole bill, the more output weighs
    assert relative(row, base, output_price=0)["whole_anthropic"] == 0.5
    assert relative(row, base, output_price=10)["whole_anthropic"] == pytest.approx(1500 / 2000)
    with pytest.raises(ValueError, match="output"):
        CachePricing("bad", cached_read=0.1, uncached=1.0, output=-1)


def test_every_strategy_is_charged_the_outputs_of_the_turns_it_was_answered_with() -> None:
    trajectories = [load_trajectory(p) for p in bundled_paths()]
    result = run_replay(trajectories, ["none", "shorten"], jobs=1)
    written = sum(sum(PromptMeasurer(default_counter()).outputs(t.messages)) for t in trajectories)
    none, shorten = result.pooled["none"], result.pooled["shorten"]
    assert 0 < none.output_tokens <= written  # turns answered by a scripted call
    assert shorten.output_tokens == none.output_tokens  # shortening changes no reply
    ratios = relative(shorten, none)
    assert ratios["billed_anthropic"] < ratios["whole_anthropic"] < 1.0


def test_the_cli_prints_the_whole_bill_and_takes_an_output_price(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["replay", "-s", "shorten", "-j", "1", "--markdown"]) == 0
    default = capsys.readouterr().out
    assert "| whole bill (A) | whole bill (O) |" in default
    assert main(["replay", "-s", "shorten", "-j", "1", "--markdown", "--output-price", "0"]) == 0
    free = capsys.readouterr().out
    row = next(r for r in free.splitlines() if r.startswith("| shorten |")).split(" | ")
    assert row[3] == row[5]  # output priced at 0: the whole bill is the input bill
    assert main(["replay", "--output-price", "-1"]) == 2
