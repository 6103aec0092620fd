"""``tokenlean replay --model NAME``: every strategy priced as one model (its figures from the
genai-prices catalogue) or one of the named presets, the pricing it used said first."""

from __future__ import annotations

import pytest

from tokenlean.cli import main
from tokenlean.cost import ANTHROPIC, OPENAI, PRICE_TABLES, PRICING
from tokenlean.replay._bundled import bundled_paths
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._runner import run_replay

#: The smallest bundled trajectory: enough calls to cache, quick to replay.
SMALL = min(bundled_paths(), key=lambda p: p.stat().st_size)


def test_a_run_prices_its_calls_under_any_pricing_after_the_fact() -> None:
    result = run_replay([load_trajectory(SMALL)], ["none", "shorten"], jobs=1)
    for name in ("none", "shorten"):
        row = result.pooled[name]
        assert len(row.call_tokens) == row.calls > 1
        assert row.billed_under(ANTHROPIC) == pytest.approx(row.billed_anthropic)
        assert row.billed_under(OPENAI) == pytest.approx(row.billed_openai)
        output = sum(out for _, _, out in row.call_tokens)
        assert row.whole_under(ANTHROPIC) == pytest.approx(row.billed_anthropic + 5 * output)
    # each of the five tables gives its own bill: a 1-hour cache writes dearer than a 5-minute one
    none = result.pooled["none"]
    bills = {n: none.billed_under(PRICING[n]) for n in PRICE_TABLES}
    assert bills["anthropic-1h"] > bills["anthropic"] > bills["anthropic-read-0.05"]


def test_the_cli_prices_as_a_model_and_says_which_pricing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    genai_prices = pytest.importorskip("genai_prices", reason="needs genai-prices (prices extra)")
    model = "claude-sonnet-4-5"
    listed = genai_prices.calc_price(genai_prices.Usage(input_tokens=1), model).model_price
    dollars = listed.input_mtok.base if hasattr(listed.input_mtok, "base") else listed.input_mtok
    args = ["replay", "-s", "shorten", "-j", "1", str(SMALL)]
    assert main([*args, "--model", model, "--cache-ttl", "1h"]) == 0
    out = capsys.readouterr().out
    said = next(line for line in out.splitlines() if line.startswith("priced as "))
    assert said.startswith(f"priced as {model}-1h: ${float(dollars):g}/M input, cache read ")
    assert f"(genai-prices {genai_prices.__version__})" in said
    shorten = next(line for line in out.splitlines() if line.startswith("  shorten "))
    assert "x none, whole bill " in shorten and shorten.endswith(" in all")


def test_the_cli_takes_a_preset_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["replay", "-s", "shorten", "-j", "1", str(SMALL)]
    assert main([*args, "--pricing", "openai-paid-writes"]) == 0
    out = capsys.readouterr().out
    assert "priced as openai-paid-writes: cache read 0.1x, uncached/written 1.25x" in out
    assert "(a preset: ratios only)" in out
