"""The early-exit nudge: signals, thresholds, and a latch that holds once per episode."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from tokenlean.langchain import TokenSavingMiddleware
from tokenlean.langchain.token_saving import NUDGED_KEY
from tokenlean.testing import scripted_agent
from tokenlean.token_saving._early_exit import DEFAULT_EARLY_EXIT_TEXT, loop_detected


@tool
def grep(pattern: str) -> str:
    """Search the repository."""
    return f"no match for {pattern}"


@tool
def ask(question: str) -> str:
    """Ask the user (interrupted for approval)."""
    return "the user says: keep going"


def calls(n: int, start: int = 0, tool_name: str = "grep") -> list[AIMessage]:
    return [
        AIMessage(
            f"try {i}",
            id=f"ai-{i}",
            tool_calls=[
                {"id": f"c-{i}", "name": tool_name, "args": {"pattern": "x", "question": "?"}}
            ],
        )
        for i in range(start, start + n)
    ]


def always_looping(steps: list[dict[str, Any]]) -> dict[str, float]:
    return {"streak": 0.9}


def nudges(messages: list[BaseMessage], text: str = DEFAULT_EARLY_EXIT_TEXT) -> int:
    return sum(isinstance(m, HumanMessage) and m.content == text for m in messages)


def invoke(agent: Any, text: str, thread: str = "t") -> dict[str, Any]:
    return agent.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": thread}})  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("signals", "fires"),
    [
        ({"streak": 0.71}, True),
        ({"streak": 0.7}, False),
        ({"hedge": 0.61, "diversity": 0.51}, True),
        ({"hedge": 0.61, "diversity": 0.5}, False),
        ({"hedge": 0.9}, False),
        ({}, False),
        (None, False),
        ({"streak": "high"}, False),
        ({"streak": math.nan}, False),
        ({"streak": math.inf}, False),
        ({"streak": None, "hedge": 0.7, "diversity": 0.8}, True),
    ],
)
def test_loop_detection_rule(signals: Any, fires: bool) -> None:
    assert loop_detected(signals) is fires


def test_the_nudge_fires_once_per_episode() -> None:
    mw = TokenSavingMiddleware(signals_fn=always_looping, early_exit_min_call_index=2)
    agent, model = scripted_agent(
        [*calls(8), AIMessage("done", id="ai-done")], tools=[grep], middleware=[mw]
    )
    result = invoke(agent, "find the bug")
    assert nudges(result["messages"]) == 1
    assert [nudges(c.messages) for c in model.calls] == [0, 0] + [1] * 7
    assert isinstance(model.calls[2].messages[-1], HumanMessage)  # appended: no byte sent changes
    assert mw.stats.early_exits == 1

    # a new user turn is a new episode: the nudge may fire once more, and only once
    model.push(*calls(4, start=20), AIMessage("done", id="ai-done-2"))
    result = invoke(agent, "there is another bug")
    assert nudges(result["messages"]) == 2
    assert mw.stats.early_exits == 2


def test_min_call_index_counts_model_calls() -> None:
    mw = TokenSavingMiddleware(signals_fn=always_looping, early_exit_min_call_index=5)
    agent, model = scripted_agent([*calls(7), AIMessage("done")], tools=[grep], middleware=[mw])
    invoke(agent, "go")
    first = next(i for i, c in enumerate(model.calls) if nudges(c.messages))
    assert first == 5  # five AI messages in state before that call


def test_custom_text_and_signals_see_steps() -> None:
    seen: list[list[dict[str, Any]]] = []

    def signals(steps: list[dict[str, Any]]) -> dict[str, float]:
        seen.append(steps)
        return {"hedge": 0.8, "diversity": 0.9} if len(steps) >= 3 else {}

    mw = TokenSavingMiddleware(
        signals_fn=signals, early_exit_min_call_index=0, early_exit_text="STOP"
    )
    agent, _ = scripted_agent([*calls(5), AIMessage("done")], tools=[grep], middleware=[mw])
    result = invoke(agent, "go")
    assert nudges(result["messages"], "STOP") == 1
    assert [len(s) for s in seen] == [0, 1, 2, 3]  # no more calls once latched
    assert seen[-1][0] == {
        "step_index": 0, "action": "grep", "action_input": {"pattern": "x", "question": "?"},
        "thought": "try 0", "observation": "no match for x", "is_error": False,
    }  # fmt: skip


@pytest.mark.parametrize(
    "settings",
    [{"enable_early_exit": False, "signals_fn": always_looping}, {"signals_fn": None}],
)
def test_nudge_off(settings: dict[str, Any]) -> None:
    mw = TokenSavingMiddleware(early_exit_min_call_index=0, **settings)
    agent, _ = scripted_agent([*calls(3), AIMessage("done")], tools=[grep], middleware=[mw])
    assert nudges(invoke(agent, "go")["messages"]) == 0
    assert mw.stats.early_exits == 0


def test_latch_survives_an_interrupt_and_a_fresh_instance(tmp_path: Path) -> None:
    config = {"configurable": {"thread_id": "hitl"}}
    db = str(tmp_path / "state.db")

    def build(saver: Any, responses: list[AIMessage]) -> tuple[Any, Any, TokenSavingMiddleware]:
        mw = TokenSavingMiddleware(signals_fn=always_looping, early_exit_min_call_index=1)
        hitl = HumanInTheLoopMiddleware(interrupt_on={"ask": True})
        agent, model = scripted_agent(
            responses, tools=[grep, ask], middleware=[hitl, mw], checkpointer=saver
        )
        return agent, model, mw

    with SqliteSaver.from_conn_string(db) as saver:
        agent, _, first = build(saver, [*calls(2), *calls(1, start=2, tool_name="ask")])
        agent.invoke({"messages": [HumanMessage("go")]}, config)
        assert agent.get_state(config).values[NUDGED_KEY] is True
        assert first.stats.early_exits == 1

    with SqliteSaver.from_conn_string(db) as saver:  # resumed elsewhere: same episode
        agent, model, second = build(saver, [*calls(3, start=3), AIMessage("done")])
        out = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert nudges(out["messages"]) == 1
    assert second.stats.early_exits == 0
    assert len(model.calls) == 4
