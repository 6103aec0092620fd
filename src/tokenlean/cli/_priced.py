"""``tokenlean replay --model NAME``: every strategy priced as one model (or preset), beside the
preset columns: the pricing used, said in one line, then each strategy's bills against none's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenlean.cost import PRICING, CachePricing
from tokenlean.prices import CacheTtl, describe, pricing_for
from tokenlean.replay import BASELINE

if TYPE_CHECKING:  # the runner imports LangChain: the command must load without the extra
    from tokenlean.replay import ReplayReport

__all__ = ["chosen_pricing", "priced_lines"]


def chosen_pricing(name: str, cache_ttl: CacheTtl) -> CachePricing:
    """A preset by its name, else the model's pricing (its provider's preset when unknown)."""
    return PRICING[name] if name in PRICING else pricing_for(name, cache_ttl=cache_ttl)


def priced_lines(result: ReplayReport, pricing: CachePricing) -> list[str]:
    """The pricing used, then per strategy its billed input and whole bill under it, as a
    ratio to no middleware's (and in dollars, where the input price is known)."""
    base = result.pooled[BASELINE]
    lines = [f"priced as {describe(pricing)}"]
    for name in result.strategies:
        row = result.pooled[name]
        billed, whole = row.billed_under(pricing), row.whole_under(pricing)
        ratio = billed / b if (b := base.billed_under(pricing)) else 1.0
        whole_ratio = whole / w if (w := base.whole_under(pricing)) else 1.0
        usd = pricing.dollars(whole)
        money = "" if usd is None else f", ${usd:,.2f} in all"
        lines.append(
            f"  {name:<28} billed input {ratio:.3f} x none, whole bill {whole_ratio:.3f} x none"
            f"{money}"
        )
    return lines
