"""What a prompt costs when providers cache its prefix.

Pricing is data: a :class:`CachePricing` gives the price of a cached input token, an uncached one
and the minimum/granularity of a cache hit, all relative to the plain input price. Presets live in
:data:`PRICING`; add your own by building a ``CachePricing``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class CachePricing:
    """Input pricing relative to the list price of one uncached input token.

    ``cached_read`` is paid for each token served from the cache; ``uncached`` for each token not
    served from it (1.25 where writing the cache costs extra, as with Anthropic's 5-minute cache).
    A hit counts only when the cached prefix has at least ``min_cached`` tokens, and is rounded
    down to a multiple of ``granularity``.
    """

    name: str
    cached_read: float
    uncached: float
    min_cached: int = 0
    granularity: int = 1

    def __post_init__(self) -> None:
        if self.cached_read < 0 or self.uncached < 0:
            raise ValueError("prices must be non-negative")
        if self.min_cached < 0 or self.granularity < 1:
            raise ValueError("min_cached must be >= 0 and granularity >= 1")

    def billable_cached(self, cached_tokens: int) -> int:
        """How many of ``cached_tokens`` the provider actually bills at the cached price."""
        if cached_tokens < self.min_cached or cached_tokens <= 0:
            return 0
        return cached_tokens - cached_tokens % self.granularity

    def billed(self, prompt_tokens: int, cached_tokens: int) -> float:
        """Billed input, in uncached-token units, for one call."""
        hit = self.billable_cached(min(cached_tokens, prompt_tokens))
        return self.cached_read * hit + self.uncached * (prompt_tokens - hit)


ANTHROPIC = CachePricing("anthropic", cached_read=0.1, uncached=1.25)
OPENAI = CachePricing("openai", cached_read=0.1, uncached=1.0, min_cached=1024, granularity=128)
NO_CACHE = CachePricing("none", cached_read=1.0, uncached=1.0)

PRICING: Mapping[str, CachePricing] = MappingProxyType(
    {p.name: p for p in (ANTHROPIC, OPENAI, NO_CACHE)}
)
