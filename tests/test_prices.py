"""Prices by model: each figure is read back from the genai-prices catalogue itself (never
written here), and without the catalogue the presets still price."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tokenlean.cost import (
    ANTHROPIC,
    ANTHROPIC_1H,
    OPENAI,
    PRICE_TABLES,
    PRICING,
    CachePricing,
    PriceTier,
)
from tokenlean.prices import model_pricing, pricing_for, provider_of

genai_prices = pytest.importorskip("genai_prices", reason="needs genai-prices (the prices extra)")

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _catalogue(model: str) -> Any:
    return genai_prices.calc_price(genai_prices.Usage(input_tokens=1), model).model_price


def _base(price: Any) -> Decimal:
    return price if isinstance(price, Decimal) else price.base


def _ratio(price: Any, base: Decimal) -> float:
    return float(_base(price) / base)


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"])
def test_anthropic_model_has_its_5_minute_and_1_hour_writes(model: str) -> None:
    listed = _catalogue(model)
    base = _base(listed.input_mtok)
    five, hour = model_pricing(model), model_pricing(model, cache_ttl="1h")
    assert five.usd_per_mtok == float(base) == hour.usd_per_mtok
    assert five.cached_read == _ratio(listed.cache_read_mtok, base) == hour.cached_read
    assert five.uncached == _ratio(listed.cache_write_mtok, base)
    assert hour.uncached == _ratio(listed.cache_write_1h_mtok, base)
    assert five.output == _ratio(listed.output_mtok, base)
    assert (five.cache_ttl, hour.cache_ttl) == (300.0, 3600.0)
    assert five.min_cached >= 1024  # from Anthropic's table of minimum cacheable prompts


def test_openai_model_writes_free_from_1024_tokens_in_steps_of_128() -> None:
    listed = _catalogue("gpt-4.1")
    base = _base(listed.input_mtok)
    pricing = model_pricing("gpt-4.1")
    assert listed.cache_write_mtok is None  # the catalogue lists no write price: free writes
    assert pricing.uncached == 1.0
    assert pricing.cached_read == _ratio(listed.cache_read_mtok, base)
    assert pricing.output == _ratio(listed.output_mtok, base)
    assert (pricing.min_cached, pricing.granularity) == (1024, 128)


def test_a_tiered_model_prices_long_prompts_at_its_tier() -> None:
    listed = _catalogue("gemini-2.5-pro")
    tier = listed.input_mtok.tiers[0]
    base = listed.input_mtok.base
    pricing = model_pricing("gemini-2.5-pro")
    assert [t.above for t in pricing.tiers] == [tier.start]
    long = pricing.for_prompt(tier.start + 1)
    assert long.uncached == float(tier.price / base)
    assert long.cached_read == float(listed.cache_read_mtok.tiers[0].price / base)
    assert long.output == float(listed.output_mtok.tiers[0].price / base)
    assert pricing.for_prompt(tier.start) is pricing  # the tier starts past its threshold
    # the bill of one call agrees with the catalogue's own, in dollars, on both sides of it
    for prompt in (tier.start - 1000, tier.start + 1000):
        usage = genai_prices.Usage(input_tokens=prompt, cache_read_tokens=prompt // 2)
        listed_usd = genai_prices.calc_price(usage, "gemini-2.5-pro").input_price
        ours = pricing.dollars(pricing.billed(prompt, prompt // 2))
        assert ours == pytest.approx(float(listed_usd))


def test_an_anthropic_bill_matches_the_catalogue_in_dollars() -> None:
    pricing = model_pricing("claude-sonnet-4-5")
    prompt, cached = 50_000, 40_000
    usage = genai_prices.Usage(
        input_tokens=prompt, cache_read_tokens=cached, cache_write_tokens=prompt - cached
    )
    listed = genai_prices.calc_price(usage, "claude-sonnet-4-5").input_price
    assert pricing.dollars(pricing.billed(prompt, cached)) == pytest.approx(float(listed))


def test_an_unknown_model_takes_its_providers_preset_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="tokenlean.prices"):
        first = pricing_for("claude-not-a-model-9000")
        again = pricing_for("claude-not-a-model-9000")
        hour = pricing_for("claude-not-a-model-9001", cache_ttl="1h")
        other = pricing_for("not-a-model-at-all-9000")
        given = pricing_for("gpt-not-a-model-9000", fallback=ANTHROPIC)
    assert (first, again, hour, other, given) == (ANTHROPIC, ANTHROPIC, ANTHROPIC_1H,
                                                 PRICING["none"], ANTHROPIC)  # fmt: skip
    lines = [r.getMessage() for r in caplog.records if "claude-not-a-model-9000" in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].startswith("tokenlean: unknown model claude-not-a-model-9000: priced at the "
                               "anthropic preset")  # fmt: skip


def test_a_known_model_through_pricing_for_is_the_catalogues() -> None:
    assert pricing_for("gpt-4.1", provider="openai") == model_pricing("gpt-4.1")
    assert pricing_for(None, provider="openai") is OPENAI


def test_provider_of_reads_the_name() -> None:
    assert provider_of("anthropic/claude-sonnet-4-5") == "anthropic"
    assert provider_of("gpt-5") == "openai"
    assert provider_of("gemini-2.5-pro") == "google"
    assert provider_of("llama-3") is None


def test_presets_name_the_five_tables() -> None:
    assert PRICE_TABLES == (
        "anthropic",
        "anthropic-read-0.05",
        "anthropic-1h",
        "openai",
        "openai-paid-writes",
    )
    ratios = {n: (PRICING[n].cached_read, PRICING[n].uncached) for n in PRICE_TABLES}
    assert ratios == {
        "anthropic": (0.1, 1.25),
        "anthropic-read-0.05": (0.05, 1.25),
        "anthropic-1h": (0.1, 2.0),
        "openai": (0.1, 1.0),
        "openai-paid-writes": (0.1, 1.25),
    }
    assert PRICING["anthropic-1h"].cache_ttl == 3600


def test_a_prompt_under_the_minimum_pays_no_write_surcharge() -> None:
    pricing = CachePricing("m", cached_read=0.1, uncached=1.25, min_cached=1024)
    assert pricing.billed(1000, 900) == 1000.0
    assert pricing.billed(2000, 1500) == 0.1 * 1500 + 1.25 * 500
    with pytest.raises(ValueError, match="tiers"):
        CachePricing("m", cached_read=0.1, uncached=1.0, tiers=[PriceTier(10, 0.1, 1, 1)])  # type: ignore[arg-type]  # a list is refused


def _python(script: str) -> subprocess.CompletedProcess[str]:
    """``script`` run by a new interpreter on this tree's sources."""
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )


def test_without_genai_prices_the_presets_still_price() -> None:
    """A real interpreter where importing genai_prices fails (a None in sys.modules)."""
    script = (
        "import sys; sys.modules['genai_prices'] = None\n"
        "import logging; logging.basicConfig(level=logging.WARNING)\n"
        "from tokenlean.prices import pricing_for, model_pricing, UnknownModelError\n"
        "from tokenlean.prices import load_catalogue\n"
        "print(pricing_for('claude-sonnet-4-5').name, pricing_for('gpt-4.1').name)\n"
        "print('loaded', load_catalogue())\n"
        "try:\n    model_pricing('gpt-4.1')\n"
        "except UnknownModelError as e:\n    print('raised', e)\n"
    )
    done = _python(script)
    assert done.stdout.splitlines()[:2] == ["anthropic openai", "loaded False"]
    assert "raised genai-prices is not installed" in done.stdout
    assert "unknown model claude-sonnet-4-5: priced at the anthropic preset" in done.stderr


def test_the_catalogue_loads_at_once_where_it_is_installed() -> None:
    """A server loads it as it starts (``genai_prices`` reads its prices on the first look-up,
    a tenth of a second that the first request priced would pay)."""
    script = (
        "import sys\n"
        "from tokenlean.prices import load_catalogue\n"
        "loaded = lambda: 'genai_prices.data' in sys.modules\n"
        "print(loaded(), load_catalogue(), loaded())\n"
    )
    done = _python(script)
    assert done.stdout.split() == ["False", "True", "True"]
