"""A weighted token budget: what one reply has cost, in the units the bill is written in.

A model call's :class:`Usage` splits its input into uncached tokens, tokens read from the
provider's prompt cache and tokens written to it, because providers bill the three at different
prices. :class:`BudgetWeights` turns a usage into a cost; :class:`Budget` says when a
:class:`Ledger` (the running total of one reply) is due an early warning, or spent.

Where usage comes from
----------------------
:func:`usage_from_metadata` reads LangChain's normalised ``usage_metadata``, whose
``input_tokens`` is the *whole* prompt, cached tokens included, with the cached part broken
out in ``input_token_details`` (``cache_read``, ``cache_creation``; langchain-anthropic splits
writes into ``ephemeral_5m_input_tokens``/``ephemeral_1h_input_tokens`` and zeroes
``cache_creation``; langchain-openai prefixes the keys with ``priority_``/``flex_`` on those
service tiers). The raw provider payloads differ, and map in as follows:

- **Anthropic** (``usage`` of a Messages response): ``input_tokens`` *excludes* cached tokens;
  ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` are added to it to get the
  prompt size. See :func:`usage_from_anthropic`.
- **OpenAI** (``usage`` of a chat completion, or of a Responses API response):
  ``prompt_tokens``/``input_tokens`` *includes* the cached tokens, which are reported in
  ``prompt_tokens_details.cached_tokens`` (``input_tokens_details.cached_tokens``). OpenAI
  charges nothing extra to write its cache. See :func:`usage_from_openai`.

So one budget means the same thing on both: a 10k-token prompt that hits the cache for 9k costs
``9000 * cache_read + 1000 * input`` whichever provider served it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from tokenlean import checks

__all__ = [
    "CACHE_READ_RATIO",
    "CACHE_WRITE_RATIO",
    "Budget",
    "BudgetWeights",
    "Ledger",
    "Usage",
    "usage_from_anthropic",
    "usage_from_metadata",
    "usage_from_openai",
]

#: Default price of a cache read, relative to an uncached input token (Anthropic and OpenAI
#: both bill cache hits at a tenth of the input price).
CACHE_READ_RATIO = 0.1
#: Default price of a cache write, relative to an uncached input token (Anthropic's 5-minute
#: cache; OpenAI reports no writes, so the weight does not matter there).
CACHE_WRITE_RATIO = 1.25


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one model call. ``input_tokens`` counts the whole prompt, cached part included.

    ``estimated`` marks a usage counted locally because the provider reported none; a local
    count cannot know what the cache served, so it has no cached tokens.
    """

    input_tokens: int
    output_tokens: int
    cache_read: int = 0
    cache_write: int = 0
    estimated: bool = False

    @property
    def uncached_input(self) -> int:
        """Input tokens billed at the plain input price."""
        return max(0, self.input_tokens - self.cache_read - self.cache_write)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _detail_sum(details: Mapping[str, Any], suffix: str) -> int:
    """Sum of the detail keys named ``suffix`` or ``<tier>_<suffix>``."""
    return sum(_int(v) for k, v in details.items() if k == suffix or k.endswith(f"_{suffix}"))


def usage_from_metadata(metadata: Mapping[str, Any] | None) -> Usage | None:
    """A :class:`Usage` from LangChain's normalised ``usage_metadata``; ``None`` when absent."""
    if not isinstance(metadata, Mapping) or "input_tokens" not in metadata:
        return None
    details = metadata.get("input_token_details")
    details = details if isinstance(details, Mapping) else {}
    ttl_writes = _int(details.get("ephemeral_5m_input_tokens")) + _int(
        details.get("ephemeral_1h_input_tokens")
    )
    # langchain-anthropic zeroes ``cache_creation`` when it reports the per-TTL split; max()
    # also holds if a version reports both for the same tokens.
    writes = max(_detail_sum(details, "cache_creation"), ttl_writes)
    return Usage(
        input_tokens=_int(metadata.get("input_tokens")),
        output_tokens=_int(metadata.get("output_tokens")),
        cache_read=_detail_sum(details, "cache_read"),
        cache_write=writes,
    )


def usage_from_anthropic(usage: Mapping[str, Any]) -> Usage:
    """A :class:`Usage` from an Anthropic Messages ``usage`` object (as a mapping).

    Anthropic's ``input_tokens`` excludes the tokens read from or written to the cache.
    """
    read = _int(usage.get("cache_read_input_tokens"))
    write = _int(usage.get("cache_creation_input_tokens"))
    return Usage(
        input_tokens=_int(usage.get("input_tokens")) + read + write,
        output_tokens=_int(usage.get("output_tokens")),
        cache_read=read,
        cache_write=write,
    )


def usage_from_openai(usage: Mapping[str, Any]) -> Usage:
    """A :class:`Usage` from an OpenAI ``usage`` object (chat completions or Responses API).

    OpenAI's prompt count includes the cached tokens; it bills no cache writes.
    """
    chat = "prompt_tokens" in usage
    details = usage.get("prompt_tokens_details" if chat else "input_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    return Usage(
        input_tokens=_int(usage.get("prompt_tokens" if chat else "input_tokens")),
        output_tokens=_int(usage.get("completion_tokens" if chat else "output_tokens")),
        cache_read=_int(details.get("cached_tokens")),
        cache_write=_int(details.get("cache_write_tokens")),
    )


@dataclass(frozen=True, slots=True)
class BudgetWeights:
    """Cost per token of each kind, in any unit (tokens, dollars per million...).

    The cache weights default to the usual provider ratios of ``input_token_weight`` (reads
    0.1x, writes 1.25x); give them explicitly to price otherwise, or set both to
    ``input_token_weight`` to count every prompt token alike.
    """

    input_token_weight: float = 1.0
    output_token_weight: float = 1.0
    cache_read_weight: float | None = None
    cache_write_weight: float | None = None

    def __post_init__(self) -> None:
        for name in (
            "input_token_weight",
            "output_token_weight",
            "cache_read_weight",
            "cache_write_weight",
        ):
            value = getattr(self, name)
            if value is not None:
                checks.number(value, name, at_least=0)

    @property
    def read(self) -> float:
        """Cost of one token read from the cache."""
        if self.cache_read_weight is None:
            return self.input_token_weight * CACHE_READ_RATIO
        return self.cache_read_weight

    @property
    def write(self) -> float:
        """Cost of one token written to the cache."""
        if self.cache_write_weight is None:
            return self.input_token_weight * CACHE_WRITE_RATIO
        return self.cache_write_weight

    @classmethod
    def of_model(
        cls,
        model: str | None,
        *,
        input_token_weight: float = 1.0,
        output_token_weight: float | None = None,
        cache_read_weight: float | None = None,
        cache_write_weight: float | None = None,
    ) -> BudgetWeights:
        """Weights priced as ``model`` (:func:`tokenlean.prices.pricing_for`: the genai-prices
        catalogue, else its provider's preset), relative to ``input_token_weight``; a weight
        given explicitly wins. ``None``: the weights as given (the class's defaults otherwise)."""
        from tokenlean.prices import pricing_for  # the catalogue is optional: looked up on use

        if model is None:
            given = (
                {} if output_token_weight is None else {"output_token_weight": output_token_weight}
            )
            return cls(
                input_token_weight=input_token_weight,
                cache_read_weight=cache_read_weight,
                cache_write_weight=cache_write_weight,
                **given,
            )
        checks.text(model, "model", blank=False)
        pricing = pricing_for(model)
        weight = checks.number(input_token_weight, "input_token_weight", at_least=0)

        def chosen(given: float | None, ratio: float) -> float:
            return weight * ratio if given is None else given

        return cls(
            input_token_weight=weight,
            output_token_weight=chosen(output_token_weight, pricing.output),
            cache_read_weight=chosen(cache_read_weight, pricing.cached_read),
            cache_write_weight=chosen(cache_write_weight, pricing.uncached),
        )

    def cost(self, usage: Usage) -> float:
        """The weighted cost of one call."""
        return (
            self.input_token_weight * usage.uncached_input
            + self.read * usage.cache_read
            + self.write * usage.cache_write
            + self.output_token_weight * usage.output_tokens
        )


@dataclass(frozen=True, slots=True)
class Ledger:
    """What one reply has spent so far, and which notices it has already had."""

    spent: float = 0.0
    calls: int = 0
    estimated_calls: int = 0
    warned: bool = False
    hinted: bool = False

    def charge(self, cost: float, *, estimated: bool = False) -> Ledger:
        return replace(
            self,
            spent=self.spent + cost,
            calls=self.calls + 1,
            estimated_calls=self.estimated_calls + int(estimated),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object) -> Ledger:
        """Read a stored ledger back; anything unreadable starts from zero."""
        if not isinstance(data, Mapping):
            return cls()
        try:
            return cls(
                spent=float(data.get("spent", 0.0)),
                calls=int(data.get("calls", 0)),
                estimated_calls=int(data.get("estimated_calls", 0)),
                warned=bool(data.get("warned", False)),
                hinted=bool(data.get("hinted", False)),
            )
        except (TypeError, ValueError):
            return cls()


@dataclass(frozen=True, slots=True)
class Budget:
    """A per-reply limit on weighted cost, with an optional early warning at a fraction of it.

    The limit is checked *between* calls: the call that crosses it runs to completion, so a
    reply can overrun by at most the cost of that one call (plus the wrap-up call that follows).
    """

    token_budget: float
    weights: BudgetWeights = BudgetWeights()
    warn_at: float | None = None

    def __post_init__(self) -> None:
        checks.number(self.token_budget, "token_budget", above=0)
        if self.warn_at is not None:
            checks.number(self.warn_at, "warn_at", above=0, below=1, wanted="a fraction in (0, 1)")

    def cost(self, usage: Usage) -> float:
        return self.weights.cost(usage)

    def exhausted(self, ledger: Ledger) -> bool:
        return ledger.spent >= self.token_budget

    def due_hint(self, ledger: Ledger) -> bool:
        """The budget is spent and the reply has not been told yet."""
        return self.exhausted(ledger) and not ledger.hinted

    def due_warning(self, ledger: Ledger) -> bool:
        """The warning fraction is passed, the budget is not yet spent, no warning given."""
        if self.warn_at is None or ledger.warned or self.exhausted(ledger):
            return False
        return ledger.spent >= self.warn_at * self.token_budget
