"""How one request the proxy counts is priced: the model it names, that model's pricing from the
genai-prices catalogue (:func:`tokenlean.prices.pricing_for`), and its prompt billed with the
share a cache holds (:mod:`tokenlean.proxy._sessions` has the rule).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from tokenlean.cost import CachePricing
from tokenlean.prices import pricing_for
from tokenlean.proxy._sessions import Block, PrefixHistory
from tokenlean.raw import Api

__all__ = ["billed", "model_named", "model_pricing"]

_GEMINI_MODEL = re.compile(r"/models/([^/:]+)")


def model_named(api: Api, path: str, values: Mapping[str, Any]) -> str | None:
    """The model a request names: its body's ``model``, or for Gemini the one in its path."""
    model = values.get("model")
    if isinstance(model, str) and model:
        return model
    found = _GEMINI_MODEL.search(path) if api == "gemini" else None
    return found.group(1) if found else None


def model_pricing(
    api: Api, model: str, preset: CachePricing, *, output_price: float | None
) -> CachePricing:
    """The catalogue's pricing of ``model`` served by ``api`` (``preset`` for a model it does
    not know), with ``output_price`` (when given) as its output."""
    priced = pricing_for(model, provider=_provider(api), fallback=preset)
    if priced is preset or output_price is None:
        return priced
    tiers = tuple(replace(t, output=output_price) for t in priced.tiers)
    return replace(priced, output=output_price, tiers=tiers)


def billed(
    pricing: CachePricing, tokens: int, blocks: list[Block], history: PrefixHistory
) -> float:
    """``tokens`` billed with the share of ``blocks`` that ``history`` has cached."""
    counted = sum(t for _, t in blocks)
    share = history.cached_tokens(blocks) / counted if counted else 0.0
    cached = round(tokens * share)
    return pricing.billed(tokens, cached)


def _provider(api: Api) -> str:
    """The catalogue's provider of an API, so a model name is looked up where it is served."""
    return "google" if api == "gemini" else api.split("_")[0]
