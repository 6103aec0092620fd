"""TokenBudgetMiddleware inside a real create_agent, with state in a real SQLite checkpointer."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain.agents.structured_output import ToolStrategy
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command
from pydantic import BaseModel

from tokenlean.budget import BudgetWeights, usage_from_metadata
from tokenlean.langchain import TokenBudgetMiddleware
from tokenlean.langchain._adapter import to_view
from tokenlean.langchain.budget import (
    DEFAULT_HINT_MESSAGE,
    DEFAULT_WARNING_MESSAGE,
    NOTICE_ID_PREFIX,
    STATE_KEY,
)
from tokenlean.testing import ScriptedChatModel, scripted_agent
from tokenlean.tokens import EstimateCounter, count_request, message_tokens


@tool
def search(query: str) -> str:
    """Search the code base."""
    return f"3 matches for {query} in src/app/models.py"


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"sent to {to}"


def usage(prompt: int, output: int, read: int = 0, write: int = 0) -> dict[str, Any]:
    """usage_metadata as LangChain normalises it (input_tokens includes cached tokens)."""
    return {
        "input_tokens": prompt,
        "output_tokens": output,
        "total_tokens": prompt + output,
        "input_token_details": {"cache_read": read, "cache_creation": write},
    }


def calling(
    n: int, name: str = "search", meta: dict[str, Any] | None = None, **args: Any
) -> AIMessage:
    return AIMessage(
        "",
        id=f"ai-{n}",
        tool_calls=[{"id": f"call-{n}", "name": name, "args": args or {"query": f"q{n}"}}],
        usage_metadata=meta,  # type: ignore[arg-type]  # None means "no usage reported"
    )


def answer(n: int, text: str = "done", meta: dict[str, Any] | None = None) -> AIMessage:
    return AIMessage(text, id=f"ai-{n}", usage_metadata=meta)  # type: ignore[arg-type]


def notices(messages: list[BaseMessage], kind: str = "hint") -> list[BaseMessage]:
    return [m for m in messages if str(m.id or "").startswith(f"{NOTICE_ID_PREFIX}{kind}")]


def tool_names(call: Any) -> list[str]:
    return [t["function"]["name"] for t in call.tools]


def ledger(agent: Any, config: Any) -> dict[str, Any]:
    return dict(agent.get_state(config).values[STATE_KEY])


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[SqliteSaver]:
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.db")) as saver:
        yield saver


def config(thread: str = "t") -> Any:
    return {"configurable": {"thread_id": thread}}


# ---------------------------------------------------------------------------------------------
# Crossing the budget


def test_crossing_the_budget_hints_once_and_wraps_up(sqlite: SqliteSaver) -> None:
    middleware = TokenBudgetMiddleware(token_budget=1000)
    agent, model = scripted_agent(
        [
            calling(1, meta=usage(600, 50)),  # 650 spent
            calling(2, meta=usage(700, 50)),  # 1400: crosses the budget, is not cut off
            calling(3, meta=usage(900, 50)),  # the model ignores tool_choice once
            answer(4, "the bug is in models.py", meta=usage(1000, 30)),
        ],
        tools=[search],
        middleware=[middleware],
        checkpointer=sqlite,
    )
    out = agent.invoke({"messages": [HumanMessage("find the bug", id="h1")]}, config())

    assert [c.tool_choice for c in model.calls] == [None, None, "none", "none"]
    assert all(tool_names(c) == ["search"] for c in model.calls)  # tools block untouched
    hints = notices(out["messages"])
    assert len(hints) == 1 and hints[0].content == DEFAULT_HINT_MESSAGE
    assert notices(model.calls[2].messages) == hints == notices(model.calls[3].messages)
    assert model.calls[2].messages[-1].id == hints[0].id  # appended right before the wrap-up
    assert out["messages"][-1].content == "the bug is in models.py"
    assert STATE_KEY not in out  # private: not in the agent's output
    record = ledger(agent, config())
    assert record["spent"] == pytest.approx(650 + 750 + 950 + 1030)
    assert (record["calls"], record["hinted"], record["reply"]) == (4, True, "h1")
    assert middleware.stats.hints == 1 and middleware.stats.wrap_up_calls == 2


def test_each_prompt_extends_the_previous_one(sqlite: SqliteSaver) -> None:
    """Cache safety in the small: the hint is appended, nothing already sent changes."""
    agent, model = scripted_agent(
        [calling(1, meta=usage(900, 200)), calling(2, meta=usage(950, 50)), answer(3)],
        tools=[search],
        middleware=[TokenBudgetMiddleware(token_budget=1000, warn_at=0.5)],
        checkpointer=sqlite,
    )
    agent.invoke({"messages": [HumanMessage("go", id="h1")]}, config())
    for before, after in zip(model.calls, model.calls[1:], strict=False):
        sent = to_view(before.messages)
        assert to_view(after.messages)[: len(sent)] == sent
        assert after.tools == before.tools


@pytest.mark.parametrize(
    ("style", "meta", "cost"),
    [
        # Anthropic via langchain-anthropic: input_tokens is raw input + cache read + creation.
        ("anthropic", usage(10_000, 100, read=9000, write=800), 200 + 900 + 1000 + 100),
        # OpenAI via langchain-openai: prompt_tokens (cached included) -> input_tokens.
        ("openai", usage(10_000, 100, read=9000), 1000 + 900 + 100),
    ],
)
def test_cached_tokens_are_weighted(
    sqlite: SqliteSaver, style: str, meta: dict[str, Any], cost: float
) -> None:
    """A 10k-token prompt served from the cache costs far less than 10k: the budget holds."""
    agent, model = scripted_agent(
        [calling(1, meta=meta), calling(2, meta=meta), answer(3, meta=meta)],
        tools=[search],
        middleware=[TokenBudgetMiddleware(token_budget=2 * cost + 1)],
        checkpointer=sqlite,
    )
    agent.invoke({"messages": [HumanMessage("go", id="h1")]}, config(style))
    assert ledger(agent, config(style))["spent"] == pytest.approx(3 * cost)
    # Two cached calls stay under the budget (10k tokens each would have crossed it at once).
    assert [c.tool_choice for c in model.calls] == [None, None, None]


def test_weights_from_the_constructor_are_used(sqlite: SqliteSaver) -> None:
    middleware = TokenBudgetMiddleware(
        token_budget=10**6,
        input_token_weight=3.0,
        output_token_weight=15.0,
        cache_read_weight=0.3,
        cache_write_weight=3.75,
    )
    meta = usage(10_000, 100, read=9000, write=800)
    agent, _ = scripted_agent([answer(1, meta=meta)], middleware=[middleware], checkpointer=sqlite)
    agent.invoke({"messages": [HumanMessage("go", id="h1")]}, config())
    expected = 3 * 200 + 0.3 * 9000 + 3.75 * 800 + 15 * 100
    assert ledger(agent, config())["spent"] == pytest.approx(expected)


def test_early_warning_once_then_hint(sqlite: SqliteSaver) -> None:
    agent, model = scripted_agent(
        [
            calling(1, meta=usage(500, 0)),  # 50%
            calling(2, meta=usage(300, 0)),  # 80%: warning
            calling(3, meta=usage(100, 0)),  # 90%: no second warning
            calling(4, meta=usage(200, 0)),  # 110%: hint
            answer(5),
        ],
        tools=[search],
        middleware=[TokenBudgetMiddleware(token_budget=1000, warn_at=0.75)],
        checkpointer=sqlite,
    )
    out = agent.invoke({"messages": [HumanMessage("go", id="h1")]}, config())
    warnings = notices(out["messages"], "warning")
    assert len(warnings) == 1 and warnings[0].content == DEFAULT_WARNING_MESSAGE
    assert notices(model.calls[2].messages, "warning") == warnings
    assert notices(model.calls[2].messages) == []
    assert len(notices(out["messages"])) == 1
    assert [c.tool_choice for c in model.calls] == [None, None, None, None, "none"]


def test_budget_spent_by_the_last_call_adds_nothing(sqlite: SqliteSaver) -> None:
    agent, model = scripted_agent(
        [answer(1, meta=usage(5000, 10))],
        middleware=[TokenBudgetMiddleware(token_budget=100)],
        checkpointer=sqlite,
    )
    out = agent.invoke({"messages": [HumanMessage("go", id="h1")]}, config())
    assert len(model.calls) == 1 and notices(out["messages"]) == []
    assert ledger(agent, config())["spent"] == 5010  # the overrun: one call, never cut off


# ---------------------------------------------------------------------------------------------
# Replies, interrupts, persistence


def test_interrupt_and_resume_keep_the_spent_amount(tmp_path: Path) -> None:
    """Resume in a fresh agent over the same SQLite file: the ledger comes from the checkpoint."""
    path = str(tmp_path / "cp.db")
    hitl = {"send_email": True}
    with SqliteSaver.from_conn_string(path) as saver:
        agent, model = scripted_agent(
            [
                calling(1, meta=usage(600, 50)),
                calling(2, "send_email", meta=usage(700, 50), to="a@b.c", body="hi"),
            ],
            tools=[search, send_email],
            middleware=[
                TokenBudgetMiddleware(token_budget=1000),
                HumanInTheLoopMiddleware(interrupt_on=hitl),
            ],
            checkpointer=saver,
        )
        paused = agent.invoke({"messages": [HumanMessage("mail it", id="h1")]}, config())
        assert "__interrupt__" in paused
        assert ledger(agent, config())["spent"] == pytest.approx(1400)

    with SqliteSaver.from_conn_string(path) as saver:
        agent, model = scripted_agent(
            [
                answer(3, "sent", meta=usage(900, 20)),
                calling(4, meta=usage(100, 10)),
                answer(5, meta=usage(200, 5)),
            ],
            tools=[search, send_email],
            middleware=[
                TokenBudgetMiddleware(token_budget=1000),
                HumanInTheLoopMiddleware(interrupt_on=hitl),
            ],
            checkpointer=saver,
        )
        out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config())
        assert out["messages"][-1].content == "sent"
        # Still the same reply: the budget was spent before the interrupt, so wrap up now.
        assert [c.tool_choice for c in model.calls] == ["none"]
        assert len(notices(out["messages"])) == 1
        assert ledger(agent, config())["spent"] == pytest.approx(1400 + 920)

        # The next human message opens a new reply, which starts from zero.
        out = agent.invoke({"messages": [HumanMessage("and now?", id="h2")]}, config())
        assert [c.tool_choice for c in model.calls[1:]] == [None, None]
        record = ledger(agent, config())
        assert (record["reply"], record["calls"], record["hinted"]) == ("h2", 2, False)
        assert record["spent"] == pytest.approx(110 + 205)
        assert len(notices(out["messages"])) == 1  # only the first reply's hint


def test_an_invoke_without_a_new_human_message_continues_the_reply(sqlite: SqliteSaver) -> None:
    agent, _ = scripted_agent(
        [answer(1, meta=usage(800, 0)), answer(2, meta=usage(300, 0)), answer(3)],
        middleware=[TokenBudgetMiddleware(token_budget=1000)],
        checkpointer=sqlite,
    )
    agent.invoke({"messages": [HumanMessage("go", id="h1")]}, config())
    agent.invoke({"messages": []}, config())
    assert ledger(agent, config())["spent"] == pytest.approx(1100)
    agent.invoke({"messages": []}, config())
    assert len(notices(agent.get_state(config()).values["messages"])) == 1


# ---------------------------------------------------------------------------------------------
# Structured output


class Verdict(BaseModel):
    """The final verdict."""

    culprit: str


def test_structured_output_is_still_delivered(sqlite: SqliteSaver) -> None:
    agent, model = scripted_agent(
        [
            calling(1, meta=usage(1500, 50)),
            AIMessage(
                "",
                id="ai-2",
                tool_calls=[{"id": "v", "name": "Verdict", "args": {"culprit": "models.py"}}],
                usage_metadata=usage(1600, 20),  # type: ignore[arg-type]
            ),
        ],
        tools=[search],
        middleware=[TokenBudgetMiddleware(token_budget=1000)],
        checkpointer=sqlite,
        response_format=ToolStrategy(Verdict),
    )
    out = agent.invoke({"messages": [HumanMessage("who did it?", id="h1")]}, config())
    assert out["structured_response"] == Verdict(culprit="models.py")
    assert tool_names(model.calls[0]) == ["search", "Verdict"]
    assert tool_names(model.calls[1]) == ["Verdict"]  # only the structured-output tool
    assert model.calls[1].tool_choice == "any"  # create_agent forces it for a ToolStrategy
    assert len(notices(model.calls[1].messages)) == 1


# ---------------------------------------------------------------------------------------------
# Models without usage, odd models, failures


def test_missing_usage_falls_back_to_the_counter(sqlite: SqliteSaver) -> None:
    counter = EstimateCounter()
    middleware = TokenBudgetMiddleware(token_budget=10**6, token_counter=counter)
    agent, model = scripted_agent(
        [calling(1), answer(2, "all good")],
        tools=[search],
        middleware=[middleware],
        checkpointer=sqlite,
        system_prompt="You are careful.",
    )
    out = agent.invoke({"messages": [HumanMessage("go", id="h1")]}, config())
    assert out["messages"][-1].content == "all good"
    expected = 0
    for call in model.calls:
        expected += count_request(
            to_view(call.messages[1:]), counter, system="You are careful.", tools=call.tools
        )
        assert call.response is not None
        expected += message_tokens(to_view([call.response])[0], counter)
    record = ledger(agent, config())
    assert record["spent"] == expected and record["estimated_calls"] == 2
    assert middleware.stats.estimated_calls == 2 and middleware.stats.calls == 2


def test_odd_content_is_estimated_and_left_untouched(sqlite: SqliteSaver) -> None:
    image = [
        {"type": "text", "text": "what is this? \udcff"},
        {"type": "image", "url": "https://example.invalid/cat.png"},
    ]
    middleware = TokenBudgetMiddleware(token_budget=10**6)
    agent, model = scripted_agent(
        [answer(1, "a cat")], middleware=[middleware], checkpointer=sqlite
    )
    out = agent.invoke({"messages": [HumanMessage(image, id="h1")]}, config())
    assert model.calls[0].messages[0].content == image and out["messages"][0].content == image
    assert middleware.stats.estimated_calls == 1 and middleware.stats.errors == 0


class _Broken:
    def count(self, text: str) -> int:
        raise RuntimeError("counter down")


def test_a_failing_middleware_never_breaks_the_agent(
    sqlite: SqliteSaver, caplog: pytest.LogCaptureFixture
) -> None:
    middleware = TokenBudgetMiddleware(token_budget=10, token_counter=_Broken())
    agent, _ = scripted_agent(
        [calling(1), answer(2, "fine")],
        tools=[search],
        middleware=[middleware],
        checkpointer=sqlite,
    )
    with caplog.at_level(logging.ERROR, logger="tokenlean.langchain.budget"):
        out = agent.invoke({"messages": [HumanMessage("go", id="h1")]}, config())
    assert out["messages"][-1].content == "fine"
    assert middleware.stats.errors == 2 and "charging a model call" in caplog.text


class _AnthropicLike(ScriptedChatModel):
    @property
    def _llm_type(self) -> str:
        return "anthropic-chat"


def test_anthropic_models_get_their_spelling_of_none(sqlite: SqliteSaver) -> None:
    from langchain.agents import create_agent

    model = _AnthropicLike(responses=[calling(1, meta=usage(2000, 0)), answer(2)])
    agent = create_agent(
        model,
        tools=[search],
        middleware=[TokenBudgetMiddleware(token_budget=1000)],
        checkpointer=sqlite,
    )
    agent.invoke({"messages": [HumanMessage("go", id="h1")]}, config())
    assert model.calls[1].tool_choice == {"type": "none"}


def test_hint_only_mode_leaves_requests_alone(sqlite: SqliteSaver) -> None:
    agent, model = scripted_agent(
        [calling(1, meta=usage(2000, 0)), answer(2)],
        tools=[search],
        middleware=[TokenBudgetMiddleware(token_budget=1000, force_no_tools=False)],
        checkpointer=sqlite,
    )
    agent.invoke({"messages": [HumanMessage("go", id="h1")]}, config())
    assert model.calls[1].tool_choice is None and len(notices(model.calls[1].messages)) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"token_budget": 0}, "token_budget"),
        ({"token_budget": -5}, "token_budget"),
        ({"token_budget": 10, "input_token_weight": -1}, "input_token_weight"),
        ({"token_budget": 10, "output_token_weight": -0.5}, "output_token_weight"),
        ({"token_budget": 10, "cache_read_weight": -0.1}, "cache_read_weight"),
        ({"token_budget": 10, "cache_write_weight": -2}, "cache_write_weight"),
        ({"token_budget": 10, "warn_at": 1.0}, "warn_at"),
        ({"token_budget": 10, "warn_at": 0}, "warn_at"),
        ({"token_budget": 10, "hint_message": "  "}, "hint_message"),
    ],
)
def test_bad_configuration_fails_at_construction(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TokenBudgetMiddleware(**kwargs)


# ---------------------------------------------------------------------------------------------
# Async


async def test_async_path_matches_the_sync_one(tmp_path: Path) -> None:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "cp.db")) as saver:
        middleware = TokenBudgetMiddleware(token_budget=1000, warn_at=0.5)
        agent, model = scripted_agent(
            [
                calling(1, meta=usage(600, 50)),
                calling(2, meta=usage(700, 50)),
                answer(3, "ok", meta=usage(800, 10)),
            ],
            tools=[search],
            middleware=[middleware],
            checkpointer=saver,
        )
        out = await agent.ainvoke({"messages": [HumanMessage("go", id="h1")]}, config())
        state = await agent.aget_state(config())
    assert [c.tool_choice for c in model.calls] == [None, None, "none"]
    assert len(notices(out["messages"], "warning")) == 1 and len(notices(out["messages"])) == 1
    assert out["messages"][-1].content == "ok"
    assert state.values[STATE_KEY]["spent"] == pytest.approx(650 + 750 + 810)


# ---------------------------------------------------------------------------------------------
# Property: whatever the usage, the invariants hold


call_usage = st.tuples(
    st.integers(0, 3000), st.integers(0, 300), st.integers(0, 3000), st.integers(0, 500)
).map(lambda t: usage(t[0] + t[2] + t[3], t[1], read=t[2], write=t[3]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(call_usage, min_size=1, max_size=6), st.integers(500, 8000))
def test_invariants_over_random_usage(metas: list[dict[str, Any]], budget: int) -> None:
    last = answer(len(metas), meta=usage(0, 0))
    replies = [calling(i, meta=m) for i, m in enumerate(metas)] + [last]
    agent, model = scripted_agent(
        replies, tools=[search], middleware=[TokenBudgetMiddleware(token_budget=budget)]
    )
    out = agent.invoke({"messages": [HumanMessage("go", id="h1")]}, config())
    weights = BudgetWeights()
    costs = [weights.cost(usage_from_metadata(m)) for m in metas] + [0.0]  # type: ignore[arg-type]
    spent_before = [sum(costs[:i]) for i in range(len(costs))]
    assert [c.tool_choice for c in model.calls] == [
        "none" if s >= budget else None for s in spent_before
    ]
    assert len(notices(out["messages"])) == int(spent_before[-1] >= budget)
    assert ledger(agent, config())["spent"] == pytest.approx(sum(costs))
    for before, after in zip(model.calls, model.calls[1:], strict=False):
        assert to_view(after.messages)[: len(before.messages)] == to_view(before.messages)


def test_a_model_prices_the_cache_weights(sqlite: SqliteSaver) -> None:
    pytest.importorskip("genai_prices", reason="needs genai-prices (the prices extra)")
    from tokenlean.prices import model_pricing

    pricing = model_pricing("claude-opus-5-5")
    middleware = TokenBudgetMiddleware(token_budget=10**6, model="claude-opus-5-5")
    meta = usage(10_000, 100, read=9000, write=800)
    agent, _ = scripted_agent([answer(1, meta=meta)], middleware=[middleware], checkpointer=sqlite)
    agent.invoke({"messages": [HumanMessage("go", id="h1")]}, config())
    expected = 200 + pricing.cached_read * 9000 + pricing.uncached * 800 + 100
    assert ledger(agent, config())["spent"] == pytest.approx(expected)
