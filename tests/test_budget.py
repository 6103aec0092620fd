"""The framework-free budget ledger: usage from each provider's payload, weights, thresholds."""

from __future__ import annotations

import json
import math

import anthropic
import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenlean.budget import (
    Budget,
    BudgetWeights,
    Ledger,
    Usage,
    usage_from_anthropic,
    usage_from_metadata,
    usage_from_openai,
)

# One prompt of 10,000 tokens: 9,000 served from the cache, 800 written to it, 200 plain.
ANTHROPIC_RAW = {
    "input_tokens": 200,
    "cache_read_input_tokens": 9000,
    "cache_creation_input_tokens": 800,
    "output_tokens": 100,
}
# As langchain-anthropic 1.7 normalises it: input_tokens becomes the whole prompt.
ANTHROPIC_METADATA = {
    "input_tokens": 10_000,
    "output_tokens": 100,
    "total_tokens": 10_100,
    "input_token_details": {"cache_read": 9000, "cache_creation": 800},
}
# The same prompt on OpenAI: the prompt count includes the cached part; no cache writes.
OPENAI_CHAT_RAW = {
    "prompt_tokens": 10_000,
    "completion_tokens": 100,
    "total_tokens": 10_100,
    "prompt_tokens_details": {"cached_tokens": 9000, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0},
}
OPENAI_RESPONSES_RAW = {
    "input_tokens": 10_000,
    "output_tokens": 100,
    "total_tokens": 10_100,
    "input_tokens_details": {"cached_tokens": 9000},
    "output_tokens_details": {"reasoning_tokens": 0},
}
# As langchain-openai 1.7 normalises it (zero-valued details are kept, None ones dropped).
OPENAI_METADATA = {
    "input_tokens": 10_000,
    "output_tokens": 100,
    "total_tokens": 10_100,
    "input_token_details": {"audio": 0, "cache_read": 9000},
    "output_token_details": {"audio": 0, "reasoning": 0},
}


def test_anthropic_raw_and_normalised_usage_agree() -> None:
    raw = usage_from_anthropic(ANTHROPIC_RAW)
    assert raw == Usage(input_tokens=10_000, output_tokens=100, cache_read=9000, cache_write=800)
    assert usage_from_metadata(ANTHROPIC_METADATA) == raw
    assert raw.uncached_input == 200


def test_anthropic_ttl_split_counts_writes_once() -> None:
    # langchain-anthropic zeroes cache_creation when it reports the 5m/1h split.
    metadata = {
        **ANTHROPIC_METADATA,
        "input_token_details": {
            "cache_read": 9000,
            "cache_creation": 0,
            "ephemeral_5m_input_tokens": 300,
            "ephemeral_1h_input_tokens": 500,
        },
    }
    usage = usage_from_metadata(metadata)
    assert usage is not None
    assert (usage.cache_read, usage.cache_write, usage.uncached_input) == (9000, 800, 200)


@pytest.mark.parametrize("raw", [OPENAI_CHAT_RAW, OPENAI_RESPONSES_RAW], ids=["chat", "responses"])
def test_openai_raw_and_normalised_usage_agree(raw: dict[str, object]) -> None:
    usage = usage_from_openai(raw)
    assert usage == Usage(input_tokens=10_000, output_tokens=100, cache_read=9000)
    assert usage_from_metadata(OPENAI_METADATA) == usage
    assert usage.uncached_input == 1000


def test_openai_service_tier_keys_are_read() -> None:
    # langchain-openai prefixes the cache keys on the priority and flex tiers.
    metadata = {
        "input_tokens": 10_000,
        "output_tokens": 100,
        "total_tokens": 10_100,
        "input_token_details": {"priority_cache_read": 9000, "priority": 1000},
    }
    usage = usage_from_metadata(metadata)
    assert usage is not None
    assert (usage.cache_read, usage.uncached_input) == (9000, 1000)


def test_default_weights_price_the_real_bill() -> None:
    weights = BudgetWeights()
    # Anthropic: 200 plain + 9000 reads at 0.1 + 800 writes at 1.25 + 100 out.
    assert weights.cost(usage_from_anthropic(ANTHROPIC_RAW)) == pytest.approx(2200)
    # OpenAI: 1000 plain + 9000 reads at 0.1 + 100 out.
    assert weights.cost(usage_from_openai(OPENAI_CHAT_RAW)) == pytest.approx(2000)


def test_cache_weights_follow_the_input_weight_unless_given() -> None:
    usage = Usage(input_tokens=1000, output_tokens=10, cache_read=600, cache_write=300)
    scaled = BudgetWeights(input_token_weight=3.0, output_token_weight=15.0)
    assert scaled.cost(usage) == pytest.approx(3 * 100 + 0.3 * 600 + 3.75 * 300 + 15 * 10)
    flat = BudgetWeights(cache_read_weight=1.0, cache_write_weight=1.0)
    assert flat.cost(usage) == pytest.approx(1010)  # every prompt token alike, as in the spec


def test_anthropic_sdk_usage_through_a_local_transport() -> None:
    """The real SDK parses a Messages response served by a local transport; its usage maps in."""
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": ANTHROPIC_RAW,
    }

    def serve(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json=body)

    client = anthropic.Anthropic(
        api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(serve))
    )
    message = client.messages.create(
        model="claude-sonnet-5-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
    )
    usage = usage_from_anthropic(json.loads(message.usage.model_dump_json()))
    assert usage == usage_from_anthropic(ANTHROPIC_RAW)


@pytest.mark.parametrize(
    "metadata",
    [None, {}, {"output_tokens": 3}, "not a mapping"],
    ids=["none", "empty", "no-input", "str"],
)
def test_missing_usage_reads_as_none(metadata: object) -> None:
    assert usage_from_metadata(metadata) is None  # type: ignore[arg-type]  # garbage on purpose


def test_garbage_counts_read_as_zero() -> None:
    usage = usage_from_metadata(
        {"input_tokens": -5, "output_tokens": "7", "input_token_details": {"cache_read": None}}
    )
    assert usage == Usage(input_tokens=0, output_tokens=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"token_budget": 0}, "token_budget"),
        ({"token_budget": -10}, "token_budget"),
        ({"token_budget": math.inf}, "token_budget"),
        ({"token_budget": math.nan}, "token_budget"),
        ({"token_budget": 10, "warn_at": 0}, "warn_at"),
        ({"token_budget": 10, "warn_at": 1}, "warn_at"),
        ({"token_budget": 10, "warn_at": 1.5}, "warn_at"),
        ({"token_budget": 10, "warn_at": -0.2}, "warn_at"),
    ],
)
def test_bad_budget_fails_with_a_clear_message(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Budget(**kwargs)


@pytest.mark.parametrize(
    "name", ["input_token_weight", "output_token_weight", "cache_read_weight", "cache_write_weight"]
)
@pytest.mark.parametrize("value", [-1.0, math.inf, math.nan])
def test_bad_weights_fail_with_a_clear_message(name: str, value: float) -> None:
    with pytest.raises(ValueError, match=name):
        BudgetWeights(**{name: value})


def test_thresholds_fire_once_each() -> None:
    budget = Budget(token_budget=100, warn_at=0.5)
    ledger = Ledger().charge(40)
    assert not budget.due_warning(ledger) and not budget.due_hint(ledger)
    ledger = ledger.charge(20)
    assert budget.due_warning(ledger) and not budget.due_hint(ledger)
    warned = Ledger.from_dict({**ledger.to_dict(), "warned": True})
    assert not budget.due_warning(warned)
    spent = warned.charge(40)
    assert budget.exhausted(spent) and budget.due_hint(spent)
    assert not budget.due_warning(Ledger().charge(150))  # past the budget: hint, not warning


def test_ledger_reads_back_garbage_as_zero() -> None:
    assert Ledger.from_dict({"spent": "lots"}) == Ledger()
    assert Ledger.from_dict(None) == Ledger()
    ledger = Ledger().charge(12.5, estimated=True)
    assert Ledger.from_dict(ledger.to_dict()) == ledger
    assert (ledger.calls, ledger.estimated_calls) == (1, 1)


counts = st.integers(min_value=0, max_value=10**7)


@given(counts, counts, counts, counts)
def test_cost_is_never_negative_and_caching_never_costs_more(
    prompt: int, output: int, read: int, write: int
) -> None:
    usage = Usage(input_tokens=prompt, output_tokens=output, cache_read=read, cache_write=write)
    weights = BudgetWeights()
    assert usage.uncached_input >= 0
    assert weights.cost(usage) >= 0
    # Serving tokens from the cache never makes a call dearer than sending them plain.
    if read + write <= prompt:
        plain = Usage(input_tokens=prompt, output_tokens=output, cache_write=write)
        assert weights.cost(usage) <= weights.cost(plain) + 1e-6


def test_weights_of_a_model_are_its_cache_prices() -> None:
    pytest.importorskip("genai_prices", reason="needs genai-prices (the prices extra)")
    from tokenlean.prices import model_pricing

    pricing = model_pricing("claude-opus-5-5")
    weights = BudgetWeights.of_model("claude-opus-5-5", input_token_weight=2.0)
    assert weights.read == pytest.approx(2.0 * pricing.cached_read)
    assert weights.write == pytest.approx(2.0 * pricing.uncached)
    assert weights.output_token_weight == pytest.approx(2.0 * pricing.output)
    # a weight given explicitly wins over the model's
    assert BudgetWeights.of_model("claude-opus-5-5", cache_write_weight=9.0).write == 9.0
