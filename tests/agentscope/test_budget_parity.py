"""Reference parity: with only AgentScope's arguments, tokenlean's reply budget counts as
AgentScope's own ``ReplyBudgetControlMiddleware`` does and forces ``tool_choice="none"`` at the
same call; pricing the cache is opt-in and moves that call as the docs say.

Both middlewares run in a real AgentScope ``Agent`` on a scripted model that reports the same
usage on every call and calls a tool each time, so the reply goes on past the budget.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.message import UserMsg
from agentscope.middleware import ReplyBudgetControlMiddleware as Reference

from tokenlean.agentscope import ReplyBudgetControlMiddleware
from tokenlean.agentscope.budget import UsageStyle
from tokenlean.testing.agentscope import RecordedTool, ScriptedChatModel, scripted_agent, turn

Usage = tuple[int, int, int, int]  # input, output, cache read, cache write, as events report


def _run(mw: Any, usage: Usage, calls: int) -> tuple[Agent, ScriptedChatModel]:
    """One reply of ``calls`` model calls, each reporting ``usage``; all but the last call a
    tool, whatever ``tool_choice`` says (a scripted model does not obey it)."""
    turns = [
        turn(calls=[(f"c{i}", "bash", {"cmd": f"step {i}"})], usage=usage) for i in range(1, calls)
    ]
    turns.append(turn("done", usage=usage))
    agent, model = scripted_agent(
        turns, tools=[RecordedTool("bash", ["ok"] * calls)], middlewares=[mw]
    )
    asyncio.run(agent.reply(UserMsg("user", "go")))
    assert len(model.calls) == calls
    return agent, model


def _choices(model: ScriptedChatModel) -> list[str | None]:
    return [c.tool_choice.mode if c.tool_choice else None for c in model.calls]


def _first_none(model: ScriptedChatModel) -> int | None:
    """The 1-based index of the first call sent with ``tool_choice="none"``."""
    choices = _choices(model)
    return choices.index("none") + 1 if "none" in choices else None


def _reference_spent(mw: Reference, agent: Agent) -> float:
    key = asyncio.run(mw.get_middleware_key())
    return float(agent.state.middle_context[key][agent.state.reply_id])


# (constructor args, usage per call, the first call sent with tool_choice="none"): the
# reference's cost of a call is input_token_weight * input_tokens + output_token_weight *
# output_tokens, cached tokens neither added nor discounted, and it wraps up once it is >= budget.
PARITY = [
    # the case: 4,000 + 2 * 500 = 5,000 a call, spent after the second
    ((10_000, 1.0, 2.0), (4_000, 500, 3_500, 0), 3),
    # the budget reached exactly (8,000 after two calls) counts as spent
    ((8_000,), (4_000, 0, 3_500, 0), 3),
    # cache writes: 1,000 + 500 = 1,500 a call, 10,500 after the seventh
    ((10_000,), (1_000, 500, 2_000, 3_000), 8),
    # 0.5 * 2,000 + 4 * 300 = 2,200 a call, 6,600 after the third
    ((5_000, 0.5, 4), (2_000, 300, 1_800, 200), 4),
]


@pytest.mark.parametrize(("args", "usage", "first_none"), PARITY)
def test_with_the_references_arguments_it_wraps_up_at_the_references_call(
    args: tuple[float, ...], usage: Usage, first_none: int
) -> None:
    calls = max(6, first_none + 1)
    reference, ours = Reference(*args), ReplyBudgetControlMiddleware(*args)
    ref_agent, ref_model = _run(reference, usage, calls)
    agent, model = _run(ours, usage, calls)
    assert _first_none(ref_model) == first_none
    assert _first_none(model) == first_none
    assert _choices(model) == _choices(ref_model)
    spent = asyncio.run(ours.spent(agent)).spent
    assert spent == pytest.approx(_reference_spent(reference, ref_agent))


# Opting in: (usage_style, usage per call, the first call sent with tool_choice="none"), with
# the constructor (10_000, 1.0, 2.0); the reference wraps up at the first call of the
# PARITY row with the same usage.
PRICED: list[tuple[UsageStyle, Usage, int]] = [
    # OpenAI-style input_tokens hold the 3,500 cached: 500 + 0.1 * 3,500 + 2 * 500 = 1,850 a
    # call, so the budget lasts to the seventh call (the reference: the third)
    ("openai", (4_000, 500, 3_500, 0), 7),
    # Anthropic-style input_tokens leave the cache out: 1,000 + 0.1 * 2,000 + 1.25 * 3,000 +
    # 2 * 500 = 5,950 a call, spent after the second (the reference, blind to the cache, sees
    # 2,000 a call and wraps up at the sixth)
    ("anthropic", (1_000, 500, 2_000, 3_000), 3),
]


@pytest.mark.parametrize(("style", "usage", "first_none"), PRICED)
def test_pricing_the_cache_is_opt_in_and_moves_the_wrap_up_as_documented(
    style: UsageStyle, usage: Usage, first_none: int
) -> None:
    calls = max(6, first_none + 1)
    _, ref_model = _run(Reference(10_000, 1.0, 2.0), usage, calls)
    priced = ReplyBudgetControlMiddleware(10_000, 1.0, 2.0, price_cache=True, usage_style=style)
    _, model = _run(priced, usage, calls)
    assert _first_none(model) == first_none
    assert _first_none(model) != _first_none(ref_model)
