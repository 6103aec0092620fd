"""Cache safety of the budget: replay a real trajectory with a budget that fires and find
exactly which calls change bytes already sent."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents.structured_output import ToolStrategy
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from tokenlean.langchain._adapter import to_view
from tokenlean.langchain.budget import NOTICE_ID_PREFIX
from tokenlean.replay._bundled import bundled_paths
from tokenlean.replay._engine import measure_replay, replay
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._metrics import PromptMeasurer, measure_calls
from tokenlean.replay._strategies import get, load_plugins
from tokenlean.testing import RecordedCall, scripted_agent
from tokenlean.tokens import tool_schema_text
from tokenlean.transcript import canonical

TRAJECTORY = "chat_test__django__django-11001"


def _prompt(call: RecordedCall, *, drop_notices: bool = False) -> list[str]:
    return [
        canonical(m)
        for m in to_view(call.messages)
        if not (drop_notices and str(m.id or "").startswith(NOTICE_ID_PREFIX))
    ]


def _first(calls: list[RecordedCall], kind: str) -> int:
    prefix = f"{NOTICE_ID_PREFIX}{kind}"
    return next(
        i for i, c in enumerate(calls) if any(str(m.id).startswith(prefix) for m in c.messages)
    )


@pytest.fixture(scope="module")
def replays() -> tuple[Any, Any, Any]:
    load_plugins()
    path = next(p for p in bundled_paths() if p.stem == TRAJECTORY)
    trajectory = load_trajectory(path)
    return trajectory, replay(trajectory), replay(trajectory, get("budget-100k").factory())


def test_a_firing_budget_breaks_no_prefix(replays: tuple[Any, Any, Any], o200k: Any) -> None:
    trajectory, baseline, budgeted = replays
    measurer = PromptMeasurer(o200k)
    metrics = measure_replay(trajectory, budgeted, measurer, strategy="budget-100k")
    reference = measure_replay(trajectory, baseline, measurer, strategy="none")

    assert metrics.calls == reference.calls
    assert metrics.prefix_breaks == 0 and metrics.break_positions == []
    assert metrics.tokens_sent > reference.tokens_sent  # the two notices, nothing else


def test_which_calls_change_and_how(replays: tuple[Any, Any, Any]) -> None:
    _, baseline, budgeted = replays
    calls: list[RecordedCall] = budgeted.calls
    warned, wrap_up = _first(calls, "warning"), _first(calls, "hint")
    assert 0 < warned < wrap_up < len(calls) - 1  # it fires mid-trajectory

    # Up to the warning the prompts are byte-identical to the run without middleware; after it
    # they are the same prompts with the notices appended where they were first sent.
    for i, (ours, theirs) in enumerate(zip(calls, baseline.calls, strict=True)):
        assert _prompt(ours, drop_notices=True) == _prompt(theirs)
        assert len(_prompt(ours)) - len(_prompt(theirs)) == (i >= warned) + (i >= wrap_up)
        assert ours.tools == theirs.tools  # the tools block never changes
    # tool_choice is a request parameter, outside the message bytes: "none" from the wrap-up on.
    assert [c.tool_choice for c in calls] == [None] * wrap_up + ["none"] * (len(calls) - wrap_up)


class Verdict(BaseModel):
    """The final verdict."""

    culprit: str


@tool
def search(query: str) -> str:
    """Search the code base."""
    return f"{query}: 3 matches in src/app/models.py"


def test_with_structured_output_the_wrap_up_call_changes_the_tools_block(o200k: Any) -> None:
    """The one cache cost of a pending ToolStrategy: the wrap-up call's tools block shrinks to
    the structured-output tool, so that call (and only it) breaks the prefix at the tools."""
    from tokenlean.langchain import TokenBudgetMiddleware

    used: Any = {"input_tokens": 600, "output_tokens": 10, "total_tokens": 610}
    replies = [
        AIMessage(
            "",
            id=f"a{i}",
            tool_calls=[{"id": f"c{i}", "name": "search", "args": {"query": "x"}}],
            usage_metadata=used,
        )
        for i in range(2)
    ]
    verdict = {"id": "v", "name": "Verdict", "args": {"culprit": "models.py"}}
    replies.append(AIMessage("", id="a2", tool_calls=[verdict], usage_metadata=used))
    agent, model = scripted_agent(
        replies,
        tools=[search],
        middleware=[TokenBudgetMiddleware(token_budget=1000)],
        response_format=ToolStrategy(Verdict),
    )
    config: Any = {"configurable": {"thread_id": "s"}}
    out = agent.invoke({"messages": [HumanMessage("who?", id="h")]}, config)
    assert out["structured_response"] == Verdict(culprit="models.py")
    measurer = PromptMeasurer(o200k)
    prompts = [
        measurer.measure(tool_schema_text(c.tools), to_view(c.messages)) for c in model.calls
    ]
    metrics = measure_calls(prompts, [])
    breaks = [(i, m.break_at) for i, m in enumerate(metrics) if m.break_at is not None]
    assert breaks == [(2, -1)]  # call 2, the wrap-up, breaks at the tools block (-1)
