"""What a prompt costs when providers cache its prefix, and whether a rewrite pays for itself.

Pricing is data: a :class:`CachePricing` gives the price of a cached input token, an uncached one
and the minimum/granularity of a cache hit, all relative to the plain input price. Presets live in
:data:`PRICING`; add your own by building a ``CachePricing``.

Rewriting bytes the model was already sent breaks the provider's prefix cache from the first
rewritten token on: that call pays the uncached price for everything after the *edit point*
instead of the cached one, and every later call sends the removed tokens no more.
:func:`expected_net_saving` is the one model every capability uses to decide whether a rewrite of
already-sent messages pays: with ``P`` the prompt's tokens, ``A`` the tokens before the edit point,
``N`` the tokens new since the previous call, ``S`` the tokens the rewrite removes and ``R`` the
calls expected after this one, in the pricing's units::

    net = billed(P, cached=P - N) - billed(P - S, cached=A) + R * cached_read * S

A rewrite of messages not yet sent (first sight) never breaks the cache and needs no model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Literal

from tokenlean import checks

__all__ = [
    "ANTHROPIC",
    "ANTHROPIC_1H",
    "ANTHROPIC_READ_005",
    "NO_CACHE",
    "OPENAI",
    "OPENAI_PAID_WRITES",
    "PRICE_TABLES",
    "PRICING",
    "CachePricing",
    "PriceTier",
    "PricingName",
    "expected_net_saving",
    "floor_pays",
    "joining_pays",
    "negligible",
    "offering_pays",
    "resolve_pricing",
]


@dataclass(frozen=True, slots=True)
class PriceTier:
    """The prices of a prompt longer than ``above`` tokens, relative to the *base* input price
    of its :class:`CachePricing` (a model that doubles its prices past 200k tokens has
    ``uncached=2.0``). As providers bill it, crossing the threshold prices every token of the
    call at the tier's rates, not only those past it."""

    above: int
    cached_read: float
    uncached: float
    output: float

    def __post_init__(self) -> None:
        checks.integer(self.above, "above", at_least=0)
        checks.number(self.cached_read, "cached_read", at_least=0)
        checks.number(self.uncached, "uncached", above=0)
        checks.number(self.output, "output", at_least=0)


@dataclass(frozen=True, slots=True)
class CachePricing:
    """Input pricing relative to the list price of one uncached input token.

    ``cached_read`` is paid for each token served from the cache; ``uncached`` for each token not
    served from it (1.25 where writing the cache costs extra, as with Anthropic's 5-minute cache).
    A hit counts only when the cached prefix has at least ``min_cached`` tokens, and is rounded
    down to a multiple of ``granularity``; a whole prompt shorter than ``min_cached`` is written
    to no cache, so it pays the plain input price (1), never a write surcharge. ``output`` is
    the price of an output token, in the same unit: what the whole bill (input billed with
    caching, plus output) weighs the agent's own tokens by. ``cache_ttl`` is how long, in
    seconds, the provider keeps a cached prefix unused: a call later than that after the
    previous one writes its whole prompt anyway.

    ``tiers`` price long prompts apart (see :class:`PriceTier`), and ``usd_per_mtok`` is what
    one unit costs: the dollars of a million plain input tokens, where known (a model's
    pricing from :mod:`tokenlean.prices`; None for the presets, which hold only ratios).
    """

    name: str
    cached_read: float
    uncached: float
    min_cached: int = 0
    granularity: int = 1
    output: float = 1.0
    cache_ttl: float = 300.0
    tiers: tuple[PriceTier, ...] = ()
    usd_per_mtok: float | None = None

    def __post_init__(self) -> None:
        checks.text(self.name, "name", blank=False)
        checks.number(self.cached_read, "cached_read", at_least=0)
        checks.number(self.uncached, "uncached", above=0)
        checks.integer(self.min_cached, "min_cached", at_least=0)
        checks.integer(self.granularity, "granularity", at_least=1)
        checks.number(self.output, "output", at_least=0)
        checks.number(self.cache_ttl, "cache_ttl", at_least=0)
        if not isinstance(self.tiers, tuple) or not all(
            isinstance(t, PriceTier) for t in self.tiers
        ):
            raise ValueError(f"tiers must be a tuple of PriceTier, got {self.tiers!r}")
        if self.usd_per_mtok is not None:
            checks.number(self.usd_per_mtok, "usd_per_mtok", above=0)

    def for_prompt(self, prompt_tokens: int) -> CachePricing:
        """The pricing a call of ``prompt_tokens`` is billed at: the highest tier it passes
        (itself when it passes none)."""
        passed = [t for t in self.tiers if prompt_tokens > t.above]
        if not passed:
            return self
        tier = max(passed, key=lambda t: t.above)
        return replace(
            self,
            cached_read=tier.cached_read,
            uncached=tier.uncached,
            output=tier.output,
            tiers=(),
        )

    def billable_cached(self, cached_tokens: int) -> int:
        """How many of ``cached_tokens`` the provider actually bills at the cached price."""
        if cached_tokens < self.min_cached or cached_tokens <= 0:
            return 0
        return cached_tokens - cached_tokens % self.granularity

    def billed(self, prompt_tokens: int, cached_tokens: int) -> float:
        """Billed input, in uncached-token units, for one call."""
        priced = self.for_prompt(prompt_tokens)
        if prompt_tokens < self.min_cached:
            # Too short to cache: nothing is written, so no write surcharge; a tier scales the
            # plain price and the write price alike, so the ratio of the two gives the plain one.
            return priced.uncached / max(self.uncached, 1.0) * prompt_tokens
        hit = priced.billable_cached(min(cached_tokens, prompt_tokens))
        return priced.cached_read * hit + priced.uncached * (prompt_tokens - hit)

    def dollars(self, units: float) -> float | None:
        """What ``units`` of this pricing (a :meth:`billed` figure, or output tokens times
        :attr:`output`) cost in dollars; None when the input price is not known."""
        return None if self.usd_per_mtok is None else units * self.usd_per_mtok / 1e6


#: Caches live 5 minutes unused, with Anthropic's default cache and OpenAI's automatic one.
#: Output prices: Anthropic lists output at 5x input on every current model; OpenAI at 4x on
#: GPT-4.1 and GPT-4o (8x on GPT-5: give a CachePricing of your own); 4x where there is no cache.
ANTHROPIC = CachePricing("anthropic", cached_read=0.1, uncached=1.25, output=5.0)
OPENAI = CachePricing(
    "openai", cached_read=0.1, uncached=1.0, min_cached=1024, granularity=128, output=4.0
)
NO_CACHE = CachePricing("none", cached_read=1.0, uncached=1.0, output=4.0)
#: The other price tables a shipped default is judged under (DESIGN.md, "prices of today"):
#: Anthropic models that read their cache at 0.05, Anthropic's one-hour cache (writes at 2x,
#: kept an hour), and OpenAI models that bill cache writes (at 1.25x, as the catalogue lists
#: them). Ratios only: :mod:`tokenlean.prices` gives a named model's own figures.
ANTHROPIC_READ_005 = replace(ANTHROPIC, name="anthropic-read-0.05", cached_read=0.05)
ANTHROPIC_1H = replace(ANTHROPIC, name="anthropic-1h", uncached=2.0, cache_ttl=3600.0)
OPENAI_PAID_WRITES = replace(OPENAI, name="openai-paid-writes", uncached=1.25)

PRICING: Mapping[str, CachePricing] = MappingProxyType(
    {
        p.name: p
        for p in (
            ANTHROPIC,
            ANTHROPIC_READ_005,
            ANTHROPIC_1H,
            OPENAI,
            OPENAI_PAID_WRITES,
            NO_CACHE,
        )
    }
)
#: The name of a preset of :data:`PRICING`, where a pricing may be given by name. The names
#: are stable: benchmarks and results files refer to them.
PricingName = Literal[
    "anthropic", "anthropic-read-0.05", "anthropic-1h", "openai", "openai-paid-writes", "none"
]
#: The five price tables every shipped default is judged under, in the order reports list them.
PRICE_TABLES: tuple[str, ...] = (
    "anthropic",
    "anthropic-read-0.05",
    "anthropic-1h",
    "openai",
    "openai-paid-writes",
)


def resolve_pricing(value: object, *, name: str = "pricing") -> CachePricing:
    """A :class:`CachePricing` from itself or from a preset's name; ``ValueError`` otherwise."""
    if isinstance(value, CachePricing):
        return value
    if isinstance(value, str) and value in PRICING:
        return PRICING[value]
    raise ValueError(f"{name} must be one of {sorted(PRICING)} or a CachePricing, got {value!r}")


def expected_net_saving(
    pricing: CachePricing, *, prompt: int, prefix: int, new: int, saved: int, remaining: int
) -> float:
    """What removing ``saved`` tokens at an edit point after ``prefix`` tokens is expected to save.

    Positive when the saving over ``remaining`` later calls outweighs re-writing the cache after
    the edit point on this call (see the module docstring for the model). ``prompt`` and ``new``
    are measured before the rewrite.
    """
    without = pricing.billed(prompt, max(0, prompt - new))
    with_edit = pricing.billed(prompt - saved, min(prefix, prompt - saved))
    return without - with_edit + remaining * pricing.cached_read * saved


def floor_pays(pricing: CachePricing, *, saved: int, after: int) -> bool:
    """Whether a first-sight cut of ``saved`` tokens pays when the prompt left holds at least
    ``after`` tokens (what is counted of it: a way in may not see its system or tool schemas).

    A prompt shorter than the provider's minimum cacheable length is written to no cache, so a
    cut that takes a prompt under it costs the next call its cache hit. With ``A`` the prompt
    after the cut (under ``min_cached``), ``C`` the part the previous call cached (at most
    ``A``), ``u``/``r`` the uncached/read prices (1 the plain price the short prompt pays), the
    cut call and the next one cost ``A(1 - r) + C(u - r) - S(u + r)`` more than without it: a
    cut that may cross the minimum is made only when it saves enough for the worst such prompt.
    """
    floor = pricing.min_cached
    if floor <= 0 or after >= floor or saved <= 0:
        return True
    u, r = pricing.uncached, pricing.cached_read
    return saved * (u + r) >= floor * (1 - r) + floor * max(0.0, u - r)


# -- when the retrieval tool joins a thread ---------------------------------------------------
# One rule for every way in: the tool's schema sits at the front of the prompt, so it may join
# from the first call, or later only where that re-writes nothing the provider still caches.


def negligible(schema: int, prompt: int, share: float) -> bool:
    """Whether a tool ``schema`` of that many tokens is at most ``share`` of a ``prompt``: then
    it is listed from the first call on (``share`` 0: never)."""
    return share > 0 and schema <= share * prompt


def joining_pays(
    pricing: CachePricing, *, extra: int, forgone: int, schema: int, calls: int
) -> bool:
    """Whether offering the retrieval tool on a call whose cache went cold pays: the cuts that
    name it (``extra`` tokens beyond those that need no way back, sent on this call and each of
    the ``calls`` expected after it), with every later call cutting at the thread's rate so far
    (``forgone`` tokens not cut on earlier calls for want of the tool, read over as many calls:
    a rate is not read from one or two), cover the ``schema`` sent on each of those calls."""
    schema_cost = schema * (pricing.uncached + pricing.cached_read * calls)
    rate = (forgone + extra) / calls
    saved = extra * (pricing.uncached + pricing.cached_read * calls)
    later = rate * calls * (pricing.uncached + pricing.cached_read * calls / 2)
    return saved + later >= schema_cost


def offering_pays(
    pricing: CachePricing,
    *,
    prompt: int,
    new: int,
    banked: float,
    schema: int,
    calls: int,
) -> bool:
    """Whether cuts that have saved ``banked`` (in uncached-token units) pay for offering the
    retrieval tool on a call of ``prompt`` tokens, ``new`` of them not yet cached.

    Offering it changes the tool list at the very front of the prompt, so the cached part of
    this call would be written again instead of read: that is never paid for (on a long run
    it costs more than the cuts saved, and at a run's end nothing is left to pay it back), so
    the tool is only offered where it re-writes nothing cached. Its ``schema`` is sent on this
    call and on each of the ``calls`` expected after it, which ``banked`` must cover.
    """
    # the one "does this rewrite pay" model, with the edit point at the front and nothing cut
    rewrite = -expected_net_saving(pricing, prompt=prompt, prefix=0, new=new, saved=0, remaining=0)
    schema_cost = schema * (pricing.uncached + pricing.cached_read * calls)
    return rewrite <= 0 and banked >= schema_cost
