"""The loop guard inside a real AgentScope ``Agent``: nudge, then an answer forced with no
tools, then the reply ended, with the episode kept in ``middle_context``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agentscope.message import HintBlock

from tests.agentscope.support import ask
from tokenlean.agentscope import LoopGuardMiddleware
from tokenlean.agentscope.loop_guard import ID_PREFIX
from tokenlean.testing.agentscope import RecordedTool, prefix_breaks, scripted_agent, turn


def _same(i: int) -> Any:
    return turn(calls=[(f"c{i}", "bash", {"cmd": "ls /tmp"})])


def _loop_agent(mw: LoopGuardMiddleware, n: int, *after: Any):  # type: ignore[no-untyped-def]
    turns = [_same(i) for i in range(n)] + list(after)
    return scripted_agent(turns, tools=[RecordedTool("bash", ["a b c"] * n)], middlewares=[mw])


def _hints(agent: Any) -> list[HintBlock]:
    return [b for m in agent.state.context for b in m.content if isinstance(b, HintBlock)]


def test_the_ladder_nudges_forces_an_answer_then_ends_the_reply() -> None:
    mw = LoopGuardMiddleware()
    agent, model = _loop_agent(mw, 12)
    final = ask(agent)
    hints = _hints(agent)
    assert [h.id.split("-")[3] for h in hints] == ["nudge", "final"]
    assert all(h.id.startswith(ID_PREFIX) for h in hints)
    forced = [i for i, c in enumerate(model.calls) if c.tool_choice is not None]
    assert len(forced) == 1 and model.calls[forced[0]].tool_choice.mode == "none"
    # the model kept calling tools after being asked to answer: the reply ends, no more calls
    assert "loop guard" in final.get_text_content()
    assert model.pending > 0
    assert (mw.stats.nudges, mw.stats.final_answers, mw.stats.ends) == (1, 1, 1)
    assert prefix_breaks(model) == []  # hints are new bytes at the end


def test_a_model_that_answers_after_the_nudge_is_left_alone() -> None:
    mw = LoopGuardMiddleware()
    agent, model = _loop_agent(mw, 3, turn("I will stop here."))
    final = ask(agent)
    assert final.get_text_content() == "I will stop here."
    assert mw.stats.nudges == 1 and mw.stats.final_answers == 0
    assert all(c.tool_choice is None for c in model.calls)
    assert agent.state.middle_context["LoopGuardMiddleware"]["level"] == 1


def test_varied_work_is_never_flagged() -> None:
    mw = LoopGuardMiddleware()
    turns = [turn(calls=[(f"c{i}", "bash", {"cmd": f"cat file{i}.py"})]) for i in range(10)]
    agent, _ = scripted_agent(
        [*turns, turn("done")],
        tools=[RecordedTool("bash", [f"content {i}" for i in range(10)])],
        middlewares=[mw],
    )
    ask(agent)
    assert _hints(agent) == [] and mw.stats.checks == 11


def test_the_ladder_is_configurable_and_checked() -> None:
    mw = LoopGuardMiddleware(responses=("nudge",), nudge_text="Stop repeating.")
    agent, _ = _loop_agent(mw, 8, turn("ok"))
    ask(agent)
    assert [h.hint for h in _hints(agent)] == ["Stop repeating."]
    with pytest.raises(ValueError, match="end"):
        LoopGuardMiddleware(responses=("end", "nudge"))


def test_a_malformed_episode_record_starts_over() -> None:
    mw = LoopGuardMiddleware()
    agent, model = _loop_agent(mw, 1, turn("done"))
    agent.state.middle_context["LoopGuardMiddleware"] = {"level": "x", "seen_at": None}
    ask(agent)
    assert len(model.calls) == 2 and mw.stats.errors == 0
    assert asyncio.run(agent.toolkit.get_tool("bash")) is not None
