"""The framework-free planner: monotone whole-batch growth, and the cache break-even model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tokenlean.context_editor import (
    Clearing,
    ClearingPlan,
    ContextEditorSettings,
    RequestView,
    apply_clearing,
    expected_net_saving,
    plan_clearing,
    request_estimator,
)
from tokenlean.cost import ANTHROPIC, NO_CACHE, OPENAI, PRICING
from tokenlean.tokens import EstimateCounter
from tokenlean.transcript import Message, ToolCall

TOOLS = ("read", "grep", "secret")


def _transcript(steps: list[list[tuple[str, int]]]) -> list[list[Message]]:
    """The message list the model sees before each call: one step = one assistant turn's calls."""
    messages = [Message("user", "fix the bug", id="u")]
    prompts = [list(messages)]
    for turn, calls in enumerate(steps):
        tool_calls = tuple(
            ToolCall(f"c{turn}_{k}", name, {"n": size}) for k, (name, size) in enumerate(calls)
        )
        messages.append(Message("assistant", f"turn {turn}", id=f"a{turn}", tool_calls=tool_calls))
        for call, (_, size) in zip(tool_calls, calls, strict=True):
            content: Any = " ".join(f"word_{i}" for i in range(size))
            if size == 7:  # a non-text result now and then
                content = ({"type": "image", "url": "x"},)
            messages.append(Message("tool", content, id=f"t{call.id}", tool_call_id=call.id))
        prompts.append(list(messages))
    return prompts


step = st.lists(st.tuples(st.sampled_from(TOOLS), st.integers(0, 300)), min_size=1, max_size=3)


@settings(max_examples=40, deadline=None)
@example(steps=[[("read", 300)], [("read", 300)]], keep=3, batch=1, trigger=0, mode="plain")
@given(
    steps=st.lists(step, min_size=1, max_size=20),
    keep=st.integers(0, 4),
    batch=st.integers(1, 6),
    trigger=st.one_of(st.integers(0, 300), st.integers(0, 6_000)),
    mode=st.sampled_from(["plain", "cache_aware"]),
)
def test_cleared_set_only_grows_by_whole_batches(
    steps: list[list[tuple[str, int]]], keep: int, batch: int, trigger: int, mode: Any
) -> None:
    config = ContextEditorSettings(
        trigger_tokens=trigger, keep=keep, batch=batch, exclude_tools={"secret"}, mode=mode
    )
    estimate = request_estimator()
    previous: Mapping[str, Clearing] = {}
    for messages in _transcript(steps):
        request = RequestView(tuple(messages), system="sys")
        plan = plan_clearing(request, config=config, previous=previous)
        assert plan == plan_clearing(request, config=config, previous=previous)  # deterministic
        _check_plan(plan, previous, messages, config)
        as_sent = tuple(apply_clearing(messages, previous))
        if estimate(replace(request, messages=as_sent)) <= trigger:
            assert plan.edit is None  # judged on the request as it will be sent
        previous = plan.cleared


def _check_plan(
    plan: ClearingPlan, previous: Mapping[str, Clearing], messages: list[Message], config: Any
) -> None:
    assert {k: plan.cleared[k] for k in previous} == dict(previous)  # identical bytes stay
    new = [k for k in plan.cleared if k not in previous]
    assert len(new) % config.batch == 0
    assert (plan.edit is None) == (not new)
    results = [m for m in messages if m.role == "tool"]
    newest = {m.tool_call_id for m in results[max(0, len(results) - config.keep) :]}
    by_id = {m.tool_call_id: m for m in results}
    for key in new:
        assert key not in newest
        assert by_id[key].is_text_only
        assert by_id[key].name != "secret"
        assert not any(c.id == key and c.name == "secret" for m in messages for c in m.tool_calls)
    if plan.edit is not None:
        assert plan.edit.tokens_after < plan.edit.tokens_before
        assert [c.tool_call_id for c in plan.edit.cleared] == new
    edited = apply_clearing(messages, plan.cleared)
    assert [(m.role, m.id, m.tool_call_id) for m in edited] == [
        (m.role, m.id, m.tool_call_id) for m in messages
    ]  # pairing and ids survive


def test_keep_larger_than_the_results_clears_nothing() -> None:
    messages = _transcript([[("read", 300)], [("read", 300)]])[-1]
    config = ContextEditorSettings(mode="plain", trigger_tokens=0, keep=3, batch=1)
    assert plan_clearing(RequestView(tuple(messages)), config=config, previous={}).edit is None
    config = ContextEditorSettings(mode="plain", trigger_tokens=0, keep=1, batch=1)
    plan = plan_clearing(RequestView(tuple(messages)), config=config, previous={})
    assert list(plan.cleared) == ["c0_0"]


def test_a_result_in_two_messages_or_without_a_call_is_never_cleared() -> None:
    messages = _transcript([[("read", 300)], [("read", 300)], [("read", 300)]])[-1]
    duplicated = [*messages, replace(messages[2], id="dup")]  # the first result, twice
    orphan = [*messages, Message("tool", "word " * 400, id="o", tool_call_id="nobody")]
    config = ContextEditorSettings(mode="plain", trigger_tokens=0, keep=0, batch=1)
    plan = plan_clearing(RequestView(tuple(duplicated)), config=config, previous={})
    assert "c0_0" not in plan.cleared and plan.cleared
    plan = plan_clearing(RequestView(tuple(orphan)), config=config, previous={})
    assert "nobody" not in plan.cleared


def test_break_even_model() -> None:
    # Without a cache, clearing always pays.
    assert expected_net_saving(NO_CACHE, prompt=50_000, prefix=0, new=0, saved=1, remaining=0) > 0
    # Anthropic: re-writing 40k tokens to save 2k pays back only over many calls.
    args = {"prompt": 50_000, "prefix": 10_000, "new": 500, "saved": 2_000}
    assert expected_net_saving(ANTHROPIC, **args, remaining=5) < 0
    assert expected_net_saving(ANTHROPIC, **args, remaining=500) > 0
    # an edit point near the end costs little to re-write: the same saving pays back sooner
    near_end = {**args, "prefix": 47_000}
    assert expected_net_saving(ANTHROPIC, **near_end, remaining=5) > 0
    # OpenAI writes the cache at no extra charge, so it breaks even sooner than Anthropic.
    assert expected_net_saving(OPENAI, **args, remaining=50) > expected_net_saving(
        ANTHROPIC, **args, remaining=50
    )


def test_pricing_presets_are_data() -> None:
    # the names are stable: benchmarks and results files name the tables by them
    assert set(PRICING) == {
        "anthropic",
        "anthropic-read-0.05",
        "anthropic-1h",
        "openai",
        "openai-paid-writes",
        "none",
    }
    for name, pricing in PRICING.items():
        assert ContextEditorSettings(mode="cache_aware", pricing=name).pricing is pricing  # type: ignore[arg-type]


def test_cache_aware_uses_expected_calls_when_given() -> None:
    messages = _transcript([[("read", 300)] for _ in range(12)])[-1]
    request = RequestView(tuple(messages))

    def plan(expected: int | None) -> ClearingPlan:
        config = ContextEditorSettings(
            trigger_tokens=1_000, keep=1, batch=2, mode="cache_aware", expected_calls=expected
        )
        return plan_clearing(request, config=config, previous={}, counter=EstimateCounter())

    assert plan(12).edit is None  # this is the last call: nothing to win back a cache re-write
    assert plan(200).edit is not None
    assert plan(None).edit is not None  # 12 calls so far: about 12 more to come


@pytest.mark.parametrize(
    "options",
    [
        {"trigger_tokens": 1.5},
        {"keep": -1},
        {"batch": 0},
        {"exclude_tools": 3},
        {"min_saved_tokens": -1},
    ],
)
def test_config_rejects_bad_values(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ContextEditorSettings(**options)
