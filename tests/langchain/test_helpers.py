"""The per-thread memos and the caches each middleware owns, which carry work from one call to
the next."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool

from tokenlean.langchain import (
    ContextEditorMiddleware,
    LoopGuardMiddleware,
    TokenBudgetMiddleware,
    TokenSavingMiddleware,
    ToolInputShorteningMiddleware,
    ToolOutputShorteningMiddleware,
    to_view,
)
from tokenlean.langchain._helpers import SchemaCache, tool_schemas
from tokenlean.langchain._memos import PrefixMemo, StepMemo
from tokenlean.langchain._views import ViewCache, convert, views_of
from tokenlean.loop_guard._steps import StepScan
from tokenlean.testing import scripted_agent


def _run(turns: int) -> list[BaseMessage]:
    messages: list[BaseMessage] = [HumanMessage("fix it", id="h0")]
    for i in range(turns):
        call = {"id": f"c{i}", "name": "bash", "args": {"command": f"ls {i % 2}"}}
        messages.append(AIMessage(f"step {i}", id=f"a{i}", tool_calls=[call]))
        messages.append(ToolMessage(f"out {i % 3}", tool_call_id=f"c{i}", name="bash", id=f"t{i}"))
        if i % 3 == 2:
            messages.append(HumanMessage("continue" if i % 2 else f"new task {i}", id=f"u{i}"))
    return messages


def _copies(messages: list[BaseMessage]) -> list[BaseMessage]:
    """Equal copies, as a checkpointer hands them back on the next user turn."""
    return [m.model_copy(deep=True) for m in messages]


def test_a_view_is_reused_only_while_the_message_is_unchanged() -> None:
    views = ViewCache()
    tool = ToolMessage("long output", tool_call_id="c1", name="bash", id="t1")
    first = views.view(tool)
    assert first == convert(tool)
    assert views.view(tool) is first
    tool.content = "another output"  # assigned in place: read again
    assert views.view(tool).text == "another output"
    tool.status = "error"
    assert views.view(tool).status == "error"
    ai = AIMessage("x", id="a1", tool_calls=[{"id": "c1", "name": "bash", "args": {}}])
    views.view(ai)
    ai.tool_calls = [{"id": "c2", "name": "grep", "args": {"p": 1}, "type": "tool_call"}]
    assert views.view(ai).tool_calls[0].name == "grep"
    ai.id = "a2"
    assert views.view(ai).id == "a2"


def test_a_view_is_dropped_with_its_message_and_never_serves_another() -> None:
    views = ViewCache()
    message = HumanMessage("once", id="h1")
    views.view(message)
    key = id(message)
    assert key in views._views
    del message
    gc.collect()
    assert key not in views._views
    # new messages, which may well live where the first did: each gets its own view
    for i in range(20):
        assert views.view(HumanMessage(f"again {i}", id=f"h{i}")).text == f"again {i}"


def test_caches_are_separate_and_bounded() -> None:
    mine, yours = ViewCache(), ViewCache(max_views=4)
    messages = [HumanMessage(f"m{i}", id=f"m{i}") for i in range(10)]
    views = views_of(messages, 2, cache=mine)
    assert len(mine._views) == 8 and not yours._views
    assert views_of(messages, 2, cache=yours) == views
    assert views_of(messages, 2, cache=mine) == views  # the same views again
    assert all(a is b for a, b in zip(views_of(messages, 2, cache=mine), views, strict=True))
    assert len(yours._views) <= 4  # cleared when full, never past its bound


def test_to_view_converts_afresh_unless_given_a_cache() -> None:
    messages = [HumanMessage("hi", id="h0"), AIMessage("ok", id="a0")]
    assert to_view(messages) == to_view(messages)
    assert all(a is not b for a, b in zip(to_view(messages), to_view(messages), strict=True))
    views = ViewCache()
    first = to_view(messages, cache=views)
    assert first == to_view(messages) and to_view(messages, 1, cache=views)[0] is first[1]


def _everyone() -> list[Any]:
    return [
        ToolInputShorteningMiddleware(retrieval_tool=False),
        ToolOutputShorteningMiddleware(),
        ContextEditorMiddleware(),
        LoopGuardMiddleware(),
        TokenSavingMiddleware(),
        TokenBudgetMiddleware(token_budget=10**9),
    ]


def _views(middleware: Any) -> ViewCache:
    if isinstance(middleware, LoopGuardMiddleware):
        return middleware._steps._views
    cache: ViewCache = middleware._views
    return cache


def test_each_middleware_reads_through_views_of_its_own() -> None:
    first, second = _everyone(), _everyone()
    caches = [_views(m) for m in first + second]
    assert len({id(c) for c in caches}) == len(caches)  # no two instances share one
    for middleware in first[:2]:  # a shortener's gate reads through its middleware's
        assert middleware._gate._views is middleware._views
    call = {"id": "c1", "name": "bash", "args": {"command": "ls"}}
    agent, _ = scripted_agent(
        [AIMessage("", id="a1", tool_calls=[call]), AIMessage("done", id="a2")],
        middleware=first,
    )
    agent.invoke({"messages": [HumanMessage("go", id="h0")]}, {"configurable": {"thread_id": "t"}})
    assert all(_views(m)._views for m in first[1:4])  # the agent's run filled its own
    assert not any(_views(m)._views for m in second)  # and left the others' alone


def _tool(name: str) -> Any:
    return StructuredTool.from_function(lambda path: path, name=name, description="Read.")


def test_a_schema_cache_converts_each_tool_once_and_only_its_own() -> None:
    tools = [_tool("read"), {"type": "function", "function": {"name": "raw"}}]
    mine, yours = SchemaCache(), SchemaCache()
    first = mine.schemas(tools)
    assert first == tool_schemas(tools) == yours.schemas(tools)
    assert mine.schemas(tools)[0] is first[0]  # the tool, converted once
    assert yours.schemas(tools)[0] is not first[0]  # another owner converts its own
    assert tool_schemas(tools)[0] is not tool_schemas(tools)[0]  # no cache: converted each time
    other = _tool("write")  # another tool is never served the first one's schema
    assert mine.schemas([other])[0]["function"]["name"] == "write"


@pytest.mark.parametrize("convert", [tool_schemas, SchemaCache().schemas])
def test_a_tool_that_cannot_be_described_is_left_out(convert: Any) -> None:
    assert convert([object(), _tool("read")]) == tool_schemas([_tool("read")])


def test_equal_copies_keep_the_work_and_are_held_from_then_on() -> None:
    memo: PrefixMemo[int] = PrefixMemo()
    messages = _run(3)
    memo.put("t", messages, len(messages), 7, reuse=None)
    copies = _copies(messages)
    held = memo.take("t", copies)
    assert held is not None and held.value == 7
    assert all(a is b for a, b in zip(held.keep, copies, strict=True))
    memo.put("t", copies, len(copies), 8, reuse=held)
    changed = [*copies[:-1], copies[-1].model_copy(update={"content": "other"})]
    assert memo.take("t", changed) is None  # a changed message starts over


def test_a_memo_is_taken_only_when_the_transcript_starts_with_its_messages() -> None:
    messages = _run(4)
    changed = [messages[0], messages[1].model_copy(update={"content": "other"}), *messages[2:]]
    for transcript, kept in [
        (messages, True),
        (messages + _run(1), True),  # a longer transcript
        (tuple(messages), True),  # any sequence
        (changed, False),  # a message in the middle changed
        (changed[:3] + messages[3:4], False),
        (messages[:-1], False),  # shorter than what was remembered
        (messages[1:] + messages[:1], False),
    ]:
        memo: PrefixMemo[int] = PrefixMemo()
        memo.put("t", messages, len(messages), 1, reuse=None)
        assert (memo.take("t", transcript) is not None) is kept


def _same(a: StepScan, b: StepScan) -> None:
    assert list(a.steps) == list(b.steps)
    assert (a.since, a.request, a.turns) == (b.since, b.request, b.turns)


def test_steps_carried_call_to_call_equal_a_scan_from_scratch() -> None:
    run = _run(12)
    memo = StepMemo(ViewCache())
    for end in range(1, len(run) + 1):
        # before each call: the transcript so far (a new user turn brings equal copies)
        messages = _copies(run[:end]) if end % 5 == 0 else run[:end]
        _same(memo.scan(messages), StepScan().extend(to_view(messages)))


def test_a_turn_edited_after_it_was_read_is_read_again() -> None:
    run = _run(4)
    memo = StepMemo(ViewCache())
    memo.scan(run[:4])  # the turn a1 and its result, read while newest
    edited = run[3].model_copy(update={"content": "out shortened"})
    messages = [*run[:3], edited, *run[4:7]]
    _same(memo.scan(messages), StepScan().extend(to_view(messages)))
