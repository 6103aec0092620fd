"""The per-thread memos and the shared view cache that carry work from one call to the next."""

from __future__ import annotations

import gc

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from tokenlean.langchain import _adapter as adapter
from tokenlean.langchain._adapter import _convert, _view
from tokenlean.langchain._helpers import PrefixMemo, StepMemo
from tokenlean.loop_guard._steps import StepScan


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
    tool = ToolMessage("long output", tool_call_id="c1", name="bash", id="t1")
    first = _view(tool)
    assert first == _convert(tool)
    assert _view(tool) is first
    tool.content = "another output"  # assigned in place: read again
    assert _view(tool).text == "another output"
    tool.status = "error"
    assert _view(tool).status == "error"
    ai = AIMessage("x", id="a1", tool_calls=[{"id": "c1", "name": "bash", "args": {}}])
    _view(ai)
    ai.tool_calls = [{"id": "c2", "name": "grep", "args": {"p": 1}, "type": "tool_call"}]
    assert _view(ai).tool_calls[0].name == "grep"
    ai.id = "a2"
    assert _view(ai).id == "a2"


def test_a_view_is_dropped_with_its_message() -> None:
    message = HumanMessage("once", id="h1")
    _view(message)
    key = id(message)
    assert key in adapter._VIEWS
    del message
    gc.collect()
    assert key not in adapter._VIEWS


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
    memo = StepMemo()
    for end in range(1, len(run) + 1):
        # before each call: the transcript so far (a new user turn brings equal copies)
        messages = _copies(run[:end]) if end % 5 == 0 else run[:end]
        _same(memo.scan(messages), StepScan().extend(adapter.to_view(messages)))


def test_a_turn_edited_after_it_was_read_is_read_again() -> None:
    run = _run(4)
    memo = StepMemo()
    memo.scan(run[:4])  # the turn a1 and its result, read while newest
    edited = run[3].model_copy(update={"content": "out shortened"})
    messages = [*run[:3], edited, *run[4:7]]
    _same(memo.scan(messages), StepScan().extend(adapter.to_view(messages)))
