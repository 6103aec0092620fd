"""Prices by model: a :class:`~tokenlean.cost.CachePricing` for a model named in a request.

The figures come from `genai-prices <https://github.com/pydantic/genai-prices>`_, the catalogue
of model prices the pydantic team keeps (the ``prices`` extra: ``pip install
'tokenlean[prices]'``): the uncached input price, the cache read price, the cache write price
of each kind (5 minutes, 1 hour), the output price, and their tiers above a prompt size. The
catalogue's prices of the day of the call are used (some change on a date it lists), at the
standard service tier. The catalogue lists no minimum cacheable prompt nor granularity: those
come from the providers' own documentation (:data:`MINIMUMS`), and stay the provider preset's
where it says nothing about a model.

Without the extra, or for a model the catalogue does not know, :func:`pricing_for` falls back to
the preset of the model's provider (:data:`tokenlean.cost.PRICING`) and logs so once per model;
:func:`model_pricing` is the strict lookup that raises instead.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Literal

from tokenlean import checks
from tokenlean._caches import byte_bounded
from tokenlean.cost import ANTHROPIC, ANTHROPIC_1H, NO_CACHE, OPENAI, CachePricing, PriceTier

__all__ = [
    "MINIMUMS",
    "CacheTtl",
    "UnknownModelError",
    "describe",
    "load_catalogue",
    "model_pricing",
    "pricing_for",
    "provider_of",
]

log = logging.getLogger("tokenlean.prices")

#: How long the cache a call writes is kept: Anthropic's default 5 minutes, or its 1 hour.
CacheTtl = Literal["5m", "1h"]
_TTL_SECONDS: Mapping[str, float] = {"5m": 300.0, "1h": 3600.0}

#: Minimum cacheable prompt and granularity of a hit, by provider and model-name prefix (the
#: first prefix that matches wins, so longer ones come first). Sources: Anthropic's prompt
#: caching guide (its table of minimum cacheable lengths per model); OpenAI's prompt caching
#: guide (1,024 tokens, then steps of 128, on every model that caches); Google's announcement
#: of implicit caching for Gemini 2.5 (May 2025: 1,024 tokens on 2.5 Flash, 2,048 on 2.5 Pro).
MINIMUMS: Mapping[str, tuple[tuple[str, int, int], ...]] = {
    "anthropic": (
        ("claude-opus-4-6", 4096, 1),
        ("claude-opus-4-5", 4096, 1),
        ("claude-haiku-4-5", 4096, 1),
        ("claude-sonnet-4-6", 2048, 1),
        ("claude-3-5-haiku", 2048, 1),
        ("claude-3-haiku", 2048, 1),
        ("claude-sonnet-4-5", 1024, 1),
        ("claude-opus-4-1", 1024, 1),
        ("claude-opus-4-0", 1024, 1),
        ("claude-sonnet-4-0", 1024, 1),
        ("claude-3-7-sonnet", 1024, 1),
    ),
    "openai": (("", 1024, 128),),
    "google": (("gemini-2.5-flash", 1024, 1), ("gemini-2.5-pro", 2048, 1)),
}

#: Each provider's preset, for a model the catalogue does not price.
_PRESETS: Mapping[str, CachePricing] = {"anthropic": ANTHROPIC, "openai": OPENAI}
#: Model-name prefixes that tell the provider when the catalogue cannot.
_PREFIXES = (
    ("claude", "anthropic"),
    ("gpt", "openai"),
    ("chatgpt", "openai"),
    ("codex", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("gemini", "google"),
)


class UnknownModelError(LookupError):
    """The catalogue prices no such model (or is not installed)."""


def provider_of(model: str) -> str | None:
    """The provider a model name points at (``"anthropic"``, ``"openai"``, ``"google"``) by its
    name alone, after any ``provider/`` prefix; None when it says nothing."""
    name = model.rsplit("/", 1)[-1].lower()
    return next((p for prefix, p in _PREFIXES if name.startswith(prefix)), None)


def model_pricing(
    model: str, *, provider: str | None = None, cache_ttl: CacheTtl = "5m"
) -> CachePricing:
    """The catalogue's pricing of ``model`` (``provider``: the catalogue's provider id, such as
    ``"anthropic"``, when known; None lets the catalogue tell from the name).

    Raises:
        UnknownModelError: the catalogue does not price the model, or is not installed.
        ValueError: the model has no price for that cache kind (a one-hour cache where the
            provider offers none).
    """
    checks.text(model, "model", blank=False)
    checks.one_of(cache_ttl, "cache_ttl", _TTL_SECONDS)
    found = _lookup(model, provider)
    return _pricing(found, cache_ttl)


def pricing_for(
    model: str | None,
    *,
    provider: str | None = None,
    fallback: CachePricing | None = None,
    cache_ttl: CacheTtl = "5m",
) -> CachePricing:
    """The pricing of ``model`` from the catalogue; never raises on an unknown model.

    Where the catalogue cannot price it (unknown, not installed, no such cache kind), the result
    is ``fallback``, or else the preset of the provider (``provider``, or the one its name points
    at; no cache where neither says), and the first time for each model a line is logged.
    """
    if not model:
        return _fallback(provider, fallback, cache_ttl)
    return _resolved(model, provider, fallback, cache_ttl)


@byte_bounded(max_entries=512)  # bounded: a proxy sees whatever names its clients send
def _resolved(
    model: str, provider: str | None, fallback: CachePricing | None, cache_ttl: CacheTtl
) -> CachePricing:
    # Cached, so the line below is logged once per model (again only once evicted).
    try:
        return model_pricing(model, provider=provider, cache_ttl=cache_ttl)
    except UnknownModelError as exc:
        chosen = _fallback(provider or provider_of(model), fallback, cache_ttl)
        log.warning(
            "tokenlean: unknown model %s: priced at the %s preset (%s)", model, chosen.name, exc
        )
        return chosen
    except ValueError as exc:
        chosen = _fallback(provider or provider_of(model), fallback, cache_ttl)
        log.warning("tokenlean: model %s: %s; priced at the %s preset", model, exc, chosen.name)
        return chosen


def describe(pricing: CachePricing) -> str:
    """One line saying what ``pricing`` charges, relative to a plain input token, and where the
    figures came from (what a report prints beside figures priced with it)."""
    parts = [
        f"cache read {pricing.cached_read:g}x",
        f"uncached/written {pricing.uncached:g}x",
        f"output {pricing.output:g}x",
        f"cache kept {pricing.cache_ttl / 60:g} min",
    ]
    if pricing.min_cached or pricing.granularity > 1:
        parts.append(f"hits from {pricing.min_cached:,} tokens in steps of {pricing.granularity}")
    parts += [f"past {t.above:,} tokens: read {t.cached_read:g}x, uncached {t.uncached:g}x, "
              f"output {t.output:g}x" for t in pricing.tiers]  # fmt: skip
    if pricing.usd_per_mtok is None:
        return f"{pricing.name}: {', '.join(parts)} (a preset: ratios only)"
    source = f"genai-prices {_catalogue().__version__}"
    return f"{pricing.name}: ${pricing.usd_per_mtok:g}/M input, {', '.join(parts)} ({source})"


def _fallback(
    provider: str | None, fallback: CachePricing | None, cache_ttl: CacheTtl
) -> CachePricing:
    if fallback is not None:
        return fallback
    if provider == "anthropic" and cache_ttl == "1h":
        return ANTHROPIC_1H
    return _PRESETS.get(provider or "", NO_CACHE)


def load_catalogue() -> bool:
    """Load the catalogue and its prices now; whether it is installed. A server calls this as it
    starts: loading takes a tenth of a second of the interpreter, which the first request it
    prices would otherwise pay, with the requests served beside it."""
    try:
        _catalogue()
    except UnknownModelError:
        return False
    with contextlib.suppress(UnknownModelError):  # no such model: the prices are loaded anyway
        _lookup("tokenlean-load", None)  # the first look-up loads the prices: any name does
    return True


def _catalogue() -> Any:
    try:
        return importlib.import_module("genai_prices")
    except ImportError as exc:
        raise UnknownModelError(
            "genai-prices is not installed (pip install 'tokenlean[prices]')"
        ) from exc


def _lookup(model: str, provider: str | None) -> Any:
    """The catalogue's price calculation of one input token: it names the model, its provider
    and the prices of the day (the catalogue's public way to look a model up)."""
    catalogue = _catalogue()
    usage = catalogue.Usage(input_tokens=1)
    try:
        return catalogue.calc_price(usage, model, provider_id=provider)
    except LookupError as exc:
        raise UnknownModelError(str(exc)) from exc


def _pricing(found: Any, cache_ttl: CacheTtl) -> CachePricing:
    prices, provider, model_id = found.model_price, found.provider.id, found.model.id
    base = _at(prices.input_mtok, 0)
    if base is None or base <= 0:
        raise UnknownModelError(f"the catalogue lists no input price for {model_id}")
    low, step = _minimums(provider, model_id)
    fields = _ratios(prices, cache_ttl, model_id, 0, base)
    tiers = tuple(
        PriceTier(above, **_ratios(prices, cache_ttl, model_id, above + 1, base))
        for above in _tier_starts(prices)
    )
    return CachePricing(
        model_id if cache_ttl == "5m" else f"{model_id}-1h",
        min_cached=low,
        granularity=step,
        cache_ttl=_TTL_SECONDS[cache_ttl],
        tiers=tiers,
        usd_per_mtok=float(base),
        **fields,
    )


def _ratios(
    prices: Any, cache_ttl: CacheTtl, model_id: str, prompt: int, base: Decimal
) -> dict[str, float]:
    """The cached read, uncached (written) and output prices of a ``prompt`` that long,
    relative to ``base``; a price the catalogue does not list is the plain input price's."""
    plain = _at(prices.input_mtok, prompt)
    assert plain is not None  # the base price exists: every tier of it does
    read = _at(prices.cache_read_mtok, prompt)
    write = _write(prices, cache_ttl, model_id, prompt)
    output = _at(prices.output_mtok, prompt)
    return {
        "cached_read": float((plain if read is None else read) / base),
        "uncached": float((plain if write is None else write) / base),
        "output": float((plain if output is None else output) / base),
    }


def _write(prices: Any, cache_ttl: CacheTtl, model_id: str, prompt: int) -> Decimal | None:
    """The price of writing the cache of that kind; None where writes cost nothing extra."""
    if cache_ttl == "1h":
        hour = _at(prices.cache_write_1h_mtok, prompt)
        if hour is None:
            raise ValueError(f"the catalogue lists no one-hour cache write price for {model_id}")
        return hour
    five = _at(prices.cache_write_5m_mtok, prompt)
    return five if five is not None else _at(prices.cache_write_mtok, prompt)


def _at(price: Any, prompt: int) -> Decimal | None:
    """A catalogue price (a number, or tiered) for a prompt of that many tokens: a tier applies
    past its start, to every token, as the catalogue computes it."""
    if price is None or isinstance(price, Decimal):
        return price
    chosen: Decimal = price.base
    for tier in price.tiers:  # sorted by start
        if prompt > tier.start:
            chosen = tier.price
    return chosen


def _tier_starts(prices: Any) -> list[int]:
    keys = ("input_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_5m_mtok",
            "cache_write_1h_mtok", "output_mtok")  # fmt: skip
    starts = {t.start for k in keys for t in getattr(getattr(prices, k), "tiers", None) or ()}
    return sorted(starts)


def _minimums(provider: str, model_id: str) -> tuple[int, int]:
    """The minimum cacheable prompt and the granularity of a hit, from :data:`MINIMUMS`, else
    the provider preset's."""
    for prefix, low, step in MINIMUMS.get(provider, ()):
        if model_id.startswith(prefix):
            return low, step
    preset = _PRESETS.get(provider, NO_CACHE)
    return preset.min_cached, preset.granularity
