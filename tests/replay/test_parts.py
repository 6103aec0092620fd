"""Where the money went: a call's bill split over its blocks adds up to the bill itself, under
every pricing (minimums, steps of a cache hit, tiers past a prompt size)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tokenlean.cost import ANTHROPIC, OPENAI, CachePricing, PriceTier
from tokenlean.replay import CallParts, billed_parts, split_billed
from tokenlean.replay._parts import OUTPUT, OWN, SCHEMAS

TIERED = replace(ANTHROPIC, name="tiered", min_cached=1024, tiers=(PriceTier(3000, 0.2, 2.5, 7.5),))
PRICINGS = [ANTHROPIC, OPENAI, TIERED, replace(OPENAI, name="writes", uncached=1.25)]


@pytest.mark.parametrize("pricing", PRICINGS, ids=lambda p: p.name)
@pytest.mark.parametrize(
    ("tokens", "cached"),
    [((300, 700, 200), 0), ((300, 700, 200), 1000), ((900, 900, 900, 900), 2700), ((50,), 50)],
)
def test_the_blocks_add_up_to_the_call_bill(
    pricing: CachePricing, tokens: tuple[int, ...], cached: int
) -> None:
    split = split_billed(pricing, tokens, cached)
    assert sum(split) == pytest.approx(pricing.billed(sum(tokens), cached))


def test_the_cached_start_is_read_and_the_rest_written() -> None:
    # OpenAI bills hits in steps of 128 from 1,024 tokens: of a 1,100-token cached prefix, 1,024
    # are read, so the second block is read for 24 of its tokens and written for the others
    split = split_billed(OPENAI, (1000, 100, 500), 1100)
    assert split == pytest.approx([100.0, 0.1 * 24 + 76, 500.0])


def test_parts_sum_and_keep_the_output_apart() -> None:
    calls = [
        CallParts((100, 400), (SCHEMAS, "results of `Read`"), cached=0, output=30),
        CallParts((100, 400, 50), (SCHEMAS, "results of `Read`", OWN), cached=500, output=10),
    ]
    parts = billed_parts(calls, ANTHROPIC)
    assert parts[OUTPUT] == pytest.approx(5.0 * 40)
    assert parts[SCHEMAS] == pytest.approx(1.25 * 100 + 0.1 * 100)
    assert sum(v for p, v in parts.items() if p != OUTPUT) == pytest.approx(
        ANTHROPIC.billed(500, 0) + ANTHROPIC.billed(550, 500)
    )
