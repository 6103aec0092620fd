"""The reply budget inside a real AgentScope ``Agent``: AgentScope's constructor and rules,
and, opted into, the cache priced as each provider reports it.

The rules run on a scripted model (each turn reports a usage); the usage styles run on
AgentScope's real Anthropic and OpenAI models, which speak to a fake provider on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import pytest
from agentscope.agent import Agent
from agentscope.credential import AnthropicCredential, OpenAICredential
from agentscope.event import ConfirmResult, UserConfirmResultEvent
from agentscope.message import HintBlock, ToolCallBlock, UserMsg
from agentscope.middleware import ReplyBudgetControlMiddleware as Reference
from agentscope.model import AnthropicChatModel, OpenAIChatModel
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.state import AgentState
from pydantic import BaseModel

from tests.agentscope.support import ask
from tokenlean.agentscope import ReplyBudgetControlMiddleware
from tokenlean.agentscope.budget import DEFAULT_HINT_MESSAGE
from tokenlean.prices import pricing_for
from tokenlean.testing.agentscope import RecordedTool, ScriptedChatModel, scripted_agent, turn
from tokenlean.testing.upstream import FakeUpstream, Recorded, Reply, json_reply

STRUCTURED = "GenerateStructuredOutput"


def _step(i: int, usage: tuple[int, int] = (600, 100)) -> Any:
    return turn(calls=[(f"c{i}", "bash", {"cmd": f"step {i}"})], usage=usage)


def _agent(mw: ReplyBudgetControlMiddleware, *turns: Any) -> tuple[Agent, ScriptedChatModel]:
    return scripted_agent(turns, tools=[RecordedTool("bash", ["ok"] * 20)], middlewares=[mw])


def _hints(call: Any, text: str) -> int:
    return sum(
        1
        for m in call.messages
        for b in (m["content"] if isinstance(m["content"], list) else [])
        if isinstance(b, dict) and text in str(b.get("text", ""))
    )


def test_the_constructor_is_agentscopes() -> None:
    ours = inspect.signature(ReplyBudgetControlMiddleware.__init__).parameters
    theirs = inspect.signature(Reference.__init__).parameters
    positional = [p for p in ours.values() if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert [p.name for p in positional] == list(theirs)
    for name in ("input_token_weight", "output_token_weight"):
        assert ours[name].default == theirs[name].default == 1
    mw = ReplyBudgetControlMiddleware(1000, 2, 5)
    assert (mw.token_budget, mw.input_token_weight, mw.output_token_weight) == (1000, 2, 5)
    with pytest.raises(ValueError, match="token_budget"):
        ReplyBudgetControlMiddleware(0)
    with pytest.raises(ValueError, match="usage_style"):
        ReplyBudgetControlMiddleware(10, price_cache=True, usage_style="gemini")  # type: ignore[arg-type]  # a wrong value on purpose
    with pytest.raises(ValueError, match="price_cache"):
        ReplyBudgetControlMiddleware(10, price_cache="yes")  # type: ignore[arg-type]  # a wrong type on purpose


@pytest.mark.parametrize(
    "option",
    [
        {"cache_read_weight": 0.1},
        {"cache_write_weight": 1.25},
        {"usage_style": "anthropic"},
        {"model": "gpt-4o"},
    ],
)
def test_a_cache_option_without_price_cache_is_refused_not_ignored(option: Any) -> None:
    with pytest.raises(ValueError, match=f"{next(iter(option))}.*price_cache=True"):
        ReplyBudgetControlMiddleware(10, **option)
    assert ReplyBudgetControlMiddleware(10, price_cache=True, **option).price_cache


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "gpt-4o", "no-such-model-xyz"])
def test_a_model_prices_the_cache_as_that_model_does(model: str) -> None:
    """As the LangChain budget's ``model=``: the catalogue's read and write prices (its
    provider's preset for a model it does not know), the output weight in the reference's
    units; a weight given explicitly wins."""
    pricing = pricing_for(model)
    weights = ReplyBudgetControlMiddleware(10, price_cache=True, model=model).budget.weights
    assert weights.cache_read_weight == pytest.approx(pricing.cached_read)
    assert weights.cache_write_weight == pytest.approx(pricing.uncached)
    assert (weights.input_token_weight, weights.output_token_weight) == (1, 1)
    given = ReplyBudgetControlMiddleware(10, price_cache=True, model=model, cache_read_weight=0.3)
    assert given.budget.weights.cache_read_weight == 0.3


def test_once_spent_the_hint_comes_once_and_no_tool_is_offered() -> None:
    mw = ReplyBudgetControlMiddleware(1000)
    # 700 after the first call, 1,400 after the second: the third is the first wrap-up call;
    # the model calls a tool anyway, so a fourth follows, still wrapped up, with no new hint
    agent, model = _agent(mw, _step(1), _step(2), _step(3), turn("done", usage=(10, 10)))
    ask(agent)
    choices = [c.tool_choice.mode if c.tool_choice else None for c in model.calls]
    assert choices == [None, None, "none", "none"]
    assert [_hints(c, "token budget") for c in model.calls] == [0, 0, 1, 1]
    assert asyncio.run(mw.spent(agent)).spent == 700 * 3 + 20


def test_a_reply_that_owes_a_structured_output_is_offered_only_that_tool() -> None:
    class Answer(BaseModel):
        summary: str

    mw = ReplyBudgetControlMiddleware(500)
    finish = turn(calls=[("c9", STRUCTURED, {"summary": "ok"})], usage=(10, 10))
    agent, model = _agent(mw, _step(1), finish, turn("done"))
    asyncio.run(agent.reply(UserMsg("user", "go"), structured_schema=Answer))
    wrap_up = model.calls[1].tool_choice
    assert wrap_up is not None and wrap_up.mode == "auto" and wrap_up.tools == [STRUCTURED]
    assert _hints(model.calls[1], "used up the token budget") == 1
    assert _hints(model.calls[1], f"Call the '{STRUCTURED}' tool now") == 1
    assert agent.state.reply_context.structured_output == {"summary": "ok"}


class _Guarded(RecordedTool):
    """A tool the user must confirm: the reply parks until they answer."""

    is_read_only = False  # a read-only tool is allowed without asking

    async def check_permissions(self, tool_input: dict[str, Any], context: Any) -> Any:
        return PermissionDecision(behavior=PermissionBehavior.ASK, message="confirm")


def test_the_spend_survives_an_interrupt_and_a_restart_and_resets_on_the_next_reply() -> None:
    mw = ReplyBudgetControlMiddleware(1000)
    first = turn(calls=[("c1", "deploy", {"env": "prod"})], usage=(600, 100))
    agent, _ = scripted_agent([first], tools=[_Guarded("deploy", ["deployed"])], middlewares=[mw])
    ask(agent, "deploy it")  # parks on the confirmation
    reply_id = agent.state.reply_id
    assert asyncio.run(mw.spent(agent)).spent == 700

    # another process: the state as saved, a new middleware instance, a new model
    saved = agent.state.model_dump_json()
    mw2 = ReplyBudgetControlMiddleware(1000)
    model2 = ScriptedChatModel([_step(2), turn("done", usage=(10, 10))])
    resumed, _ = scripted_agent(
        tools=[_Guarded("deploy", ["deployed"]), RecordedTool("bash", ["ok"])],
        middlewares=[mw2],
        model=model2,
    )
    resumed.state = AgentState.model_validate_json(saved)
    (call,) = [b for m in resumed.state.context for b in m.content if isinstance(b, ToolCallBlock)]
    confirm = ConfirmResult(confirmed=True, tool_call=call)
    asyncio.run(resumed.reply(UserConfirmResultEvent(reply_id=reply_id, confirm_results=[confirm])))
    # 700 before the pause + 700: the call after is a wrap-up call of the same reply
    assert [c.tool_choice.mode if c.tool_choice else None for c in model2.calls] == [None, "none"]
    assert asyncio.run(mw2.spent(resumed)).spent == 700 * 2 + 20

    model2.push(turn("hello", usage=(50, 5)))
    ask(resumed, "something else")
    assert model2.calls[-1].tool_choice is None
    assert asyncio.run(mw2.spent(resumed)).spent == 55


def _usage_agent(model: Any, mw: ReplyBudgetControlMiddleware | Reference) -> Agent:
    return Agent(name="agent", system_prompt="be brief", model=model, middlewares=[mw])


def _anthropic(request: Recorded) -> Reply:
    usage = {
        "input_tokens": 100,
        "output_tokens": 10,
        "cache_read_input_tokens": 900,
        "cache_creation_input_tokens": 0,
    }
    return json_reply(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": "hi"}],
            "stop_reason": "end_turn",
            "usage": usage,
        }
    )


def _openai(request: Recorded) -> Reply:
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 10,
        "total_tokens": 1010,
        "prompt_tokens_details": {"cached_tokens": 900},
    }
    message = {"role": "assistant", "content": "hi"}
    return json_reply(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": usage,
        }
    )


def _spent(mw: ReplyBudgetControlMiddleware | Reference, agent: Agent) -> float:
    if isinstance(mw, ReplyBudgetControlMiddleware):
        return asyncio.run(mw.spent(agent)).spent
    key = asyncio.run(mw.get_middleware_key())
    return float(agent.state.middle_context[key][agent.state.reply_id])


def test_on_real_models_the_cache_counts_as_agentscope_counts_it_unless_priced() -> None:
    """1,000 prompt tokens of which 900 read from the cache, and 10 out. As AgentScope's own
    middleware counts (the default), ``input_tokens`` as reported: Anthropic's 100 + 10,
    OpenAI's 1,000 + 10. With ``price_cache=True``, 100 + 90 + 10 on both."""
    with FakeUpstream(script=_anthropic) as a, FakeUpstream(script=_openai) as o:
        models: dict[str, Callable[[], Any]] = {  # a model each run: a client keeps its loop
            "anthropic": lambda: AnthropicChatModel(
                AnthropicCredential(api_key="test", base_url=a.url), "claude-test", stream=False
            ),
            "openai": lambda: OpenAIChatModel(
                OpenAICredential(api_key="test", base_url=f"{o.url}/v1"), "gpt-test", stream=False
            ),
        }
        spent = {}
        for name, model in models.items():
            for kind, mw in (
                ("agentscope", Reference(10_000)),
                ("default", ReplyBudgetControlMiddleware(10_000)),
                ("priced", ReplyBudgetControlMiddleware(10_000, price_cache=True)),
            ):
                agent = _usage_agent(model(), mw)
                ask(agent, "hi")
                spent[name, kind] = _spent(mw, agent)
        assert len(a.requests) == len(o.requests) == 3
    assert spent == {
        ("anthropic", "agentscope"): 110,
        ("anthropic", "default"): 110,
        ("anthropic", "priced"): pytest.approx(200),
        ("openai", "agentscope"): 1010,
        ("openai", "default"): 1010,
        ("openai", "priced"): pytest.approx(200),
    }


def test_the_cache_weights_and_the_style_can_be_given() -> None:
    mw = ReplyBudgetControlMiddleware(
        10_000,
        price_cache=True,
        cache_read_weight=0.5,
        cache_write_weight=2,
        usage_style="anthropic",
    )
    # Anthropic style: 100 uncached + 800 read + 100 written, 10 out
    agent, _ = _agent(mw, turn("hi", usage=(100, 10, 800, 100)))
    ask(agent)
    assert asyncio.run(mw.spent(agent)).spent == pytest.approx(100 + 400 + 200 + 10)
    openai_style = ReplyBudgetControlMiddleware(10_000, price_cache=True, usage_style="openai")
    agent, _ = _agent(openai_style, turn("hi", usage=(1000, 10, 800, 0)))
    ask(agent)
    assert asyncio.run(openai_style.spent(agent)).spent == pytest.approx(200 + 80 + 10)


def test_the_default_hint_is_the_one_appended() -> None:
    mw = ReplyBudgetControlMiddleware(100)
    agent, model = _agent(mw, _step(1), turn("done"))
    ask(agent)
    hints = [b for m in agent.state.context for b in m.content if isinstance(b, HintBlock)]
    assert [h.hint for h in hints] == [DEFAULT_HINT_MESSAGE]
    assert _hints(model.calls[1], "token budget") == 1
