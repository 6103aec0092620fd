"""Clearing old tool results from what a real AgentScope ``Agent`` sends: request-only,
batched, the cleared set kept in ``middle_context``, a cleared result readable again."""

from __future__ import annotations

import asyncio
import logging
import re

import pytest
from agentscope.state import AgentState

from tests.agentscope.support import ask, memory_results, results
from tokenlean.agentscope import ContextEditorMiddleware, read_original_tool
from tokenlean.context_editor import ContextEdit, ContextEditorSettings
from tokenlean.store import InMemoryOriginalStore
from tokenlean.testing.agentscope import (
    RecordedTool,
    ScriptedChatModel,
    prefix_breaks,
    scripted_agent,
    turn,
)

PAGE = "\n".join(f"row {i}: value {i * 7}" for i in range(120))
PLAIN = ContextEditorSettings(trigger_tokens=2_000, keep=2, batch=2, mode="plain")


def _turns(n: int) -> list:  # type: ignore[type-arg]
    steps = [turn(calls=[(f"c{i}", "fetch", {"page": i})]) for i in range(n)]
    return [*steps, turn("done")]


def _editor_agent(n: int, settings: ContextEditorSettings, edits: list[ContextEdit]):  # type: ignore[no-untyped-def]
    mw = ContextEditorMiddleware(settings, on_edit=edits.append)
    tools = [RecordedTool("fetch", [f"page {i}\n{PAGE}" for i in range(n)])]
    tools.append(read_original_tool(InMemoryOriginalStore()))
    return scripted_agent(_turns(n), tools=tools, middlewares=[mw])


def test_old_results_are_cleared_from_requests_only() -> None:
    edits: list[ContextEdit] = []
    agent, model = _editor_agent(8, PLAIN, edits)
    ask(agent)
    last = results(model.calls[-1])
    cleared = [r for r in last if "result cleared" in r]
    assert cleared and len(last) - len(cleared) >= PLAIN.keep
    assert all(r.startswith("page ") for r in last[len(cleared) :])  # the newest kept whole
    # memory keeps every result whole
    assert [b.output[0].text.split("\n")[0] for b in memory_results(agent)] == [
        f"page {i}" for i in range(8)
    ]
    assert edits and edits[-1].total_cleared == len(cleared)
    assert set(agent.state.middle_context["ContextEditorMiddleware"]) == {
        f"c{i}" for i in range(len(cleared))
    }


def test_clearing_grows_in_batches_and_each_batch_breaks_the_prefix_once() -> None:
    edits: list[ContextEdit] = []
    agent, model = _editor_agent(10, PLAIN, edits)
    ask(agent)
    assert len(prefix_breaks(model)) == len(edits)  # a break only where a batch was cleared
    assert all(len(e.cleared) == e.batches * PLAIN.batch for e in edits)


def test_the_cleared_set_survives_a_restart() -> None:
    edits: list[ContextEdit] = []
    agent, model = _editor_agent(8, PLAIN, edits)
    ask(agent)
    saved = agent.state.model_dump_json()
    fresh_model = ScriptedChatModel([turn("again")])
    fresh, _ = scripted_agent(
        tools=[RecordedTool("fetch"), read_original_tool(InMemoryOriginalStore())],
        middlewares=[ContextEditorMiddleware(PLAIN)],
        model=fresh_model,
    )
    fresh.state = AgentState.model_validate_json(saved)
    ask(fresh, "and now?")
    before = results(model.calls[-1])
    after = results(fresh_model.calls[0])
    assert after[: len(before)] == before  # the same placeholders, the same bytes


def test_a_cleared_result_is_read_back_from_memory() -> None:
    edits: list[ContextEdit] = []
    agent, model = _editor_agent(8, PLAIN, edits)
    ask(agent)
    placeholder = next(r for r in results(model.calls[-1]) if "result cleared" in r)
    handle = re.search(r'with "([^"]+)"', placeholder).group(1)  # type: ignore[union-attr]
    model.push(turn(calls=[("r1", "read_original", {"handle": handle})]), turn("ok"))
    ask(agent, "what was on the first page?")
    answer = results(model.calls[-1])[-1]
    assert "page 0" in answer and "row 119: value 833" in answer


def test_a_failing_callback_does_not_stop_clearing() -> None:
    def broken(edit: ContextEdit) -> None:
        raise RuntimeError("callback bug")

    mw = ContextEditorMiddleware(PLAIN, on_edit=broken)
    agent, model = scripted_agent(
        _turns(6), tools=[RecordedTool("fetch", [PAGE] * 6)], middlewares=[mw]
    )
    ask(agent)
    assert any("result cleared" in r for r in results(model.calls[-1]))
    with pytest.raises(ValueError, match="settings"):
        ContextEditorMiddleware({"trigger_tokens": 5})  # type: ignore[arg-type]


class _BrokenCounter:
    def count(self, text: str) -> int:
        raise RuntimeError("counter bug")


def test_a_failure_sends_the_request_unchanged(caplog: pytest.LogCaptureFixture) -> None:
    mw = ContextEditorMiddleware(PLAIN, counter=_BrokenCounter())  # type: ignore[arg-type]
    agent, model = scripted_agent(
        _turns(6), tools=[RecordedTool("fetch", [PAGE] * 6)], middlewares=[mw]
    )
    plain, plain_model = scripted_agent(_turns(6), tools=[RecordedTool("fetch", [PAGE] * 6)])
    with caplog.at_level(logging.WARNING, logger="tokenlean"):
        ask(agent)
    ask(plain)
    assert [c.messages for c in model.calls] == [c.messages for c in plain_model.calls]
    assert any("context editor failed" in r.getMessage() for r in caplog.records)


def test_under_the_trigger_nothing_changes() -> None:
    edits: list[ContextEdit] = []
    agent, model = _editor_agent(3, ContextEditorSettings(), edits)
    plain, plain_model = scripted_agent(
        _turns(3),
        tools=[
            RecordedTool("fetch", [f"page {i}\n{PAGE}" for i in range(3)]),
            read_original_tool(InMemoryOriginalStore()),
        ],
    )
    ask(agent)
    ask(plain)
    assert edits == []
    assert [c.messages for c in model.calls] == [c.messages for c in plain_model.calls]
    assert asyncio.run(agent.toolkit.get_tool("read_original")) is not None
