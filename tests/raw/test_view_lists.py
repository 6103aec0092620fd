"""A message list re-sent with new messages after it takes the view of the messages it shares
with the last list in one step and reads only the others (frozen lists by their objects, others
by their content: ``test_view_contents``); every view is the one a fresh read gives."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.data import pytest_history
from tokenlean._caches import BoundedLru, Openings
from tokenlean.raw import (
    _anthropic,
    _gemini,
    _openai_chat,
    _openai_responses,
    _reading,
    frozen_bodies,
)
from tokenlean.raw._view import RawView


@contextmanager
def nothing_kept() -> Iterator[None]:
    """Within the block, no list is found by its content (nor kept): every read is from scratch."""
    kept = _reading._CONTENTS
    _reading._CONTENTS = Openings(BoundedLru(max_entries=1, max_bytes=0), _reading._ListRead.length)
    try:
        yield
    finally:
        _reading._CONTENTS = kept


def _fresh(body: dict[str, Any], reader: Any = _anthropic.read) -> RawView:
    with nothing_kept():
        view = reader(copy.deepcopy(body))  # other objects, not frozen, nothing kept
    assert view is not None
    return view


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The indices of the messages read one by one from now on."""
    seen: list[int] = []
    one = _reading._read_once

    def counted(out: Any, reader: Any, i: int, message: Any) -> None:
        seen.append(i)
        one(out, reader, i, message)

    monkeypatch.setattr(_reading, "_read_once", counted)
    return seen


def test_a_list_sent_again_with_more_reads_only_the_new_messages(monkeypatch: pytest.MonkeyPatch):
    history = pytest_history(4, task="lists sent again")
    with frozen_bodies():
        _anthropic.read({"messages": history[:5]})
        reads = _reads(monkeypatch)
        view = _anthropic.read({"messages": history})
    assert reads == [5, 6, 7, 8]
    assert view == _fresh({"messages": history})


def test_a_list_with_another_object_is_read_from_that_message_on(monkeypatch: pytest.MonkeyPatch):
    history = pytest_history(3, task="one message another object")
    with frozen_bodies():
        _anthropic.read({"messages": history})
        edited = copy.deepcopy(history[2])
        edited["content"][0]["content"] = "another run"
        changed = [*history[:2], edited, *history[3:]]
        reads = _reads(monkeypatch)
        view = _anthropic.read({"messages": changed})
    assert reads == list(range(2, len(history)))
    assert view == _fresh({"messages": changed})
    assert view.messages[2].content == "another run"


def test_a_newest_message_changed_and_new_ones_read_only_those(monkeypatch: pytest.MonkeyPatch):
    """A client moves its cache breakpoint to the newest message: the one before loses it."""
    history = pytest_history(3, task="breakpoint moved")
    marked = copy.deepcopy(history[-1])
    marked["content"][-1]["cache_control"] = {"type": "ephemeral"}
    with frozen_bodies():
        _anthropic.read({"messages": [*history[:-1], marked]})
        later = [*history, *pytest_history(4, task="breakpoint moved")[7:]]
        reads = _reads(monkeypatch)
        view = _anthropic.read({"messages": later})
    assert reads == [6, 7, 8]
    assert view == _fresh({"messages": later})


def test_a_shorter_list_and_another_reader_do_not_take_the_kept_view(
    monkeypatch: pytest.MonkeyPatch,
):
    history = pytest_history(3, task="shorter and other readers")
    with frozen_bodies():
        _anthropic.read({"messages": history})
        reads = _reads(monkeypatch)
        shorter = _anthropic.read({"messages": history[:3]})
        chat = _openai_chat.read({"messages": history})
    assert reads == list(range(len(history)))  # the shorter list is the kept one's start
    assert shorter == _fresh({"messages": history[:3]})
    assert chat == _fresh({"messages": history}, _openai_chat.read)


def test_a_list_that_may_be_mutated_is_read_message_by_message(monkeypatch: pytest.MonkeyPatch):
    history = pytest_history(2, task="not frozen")
    _anthropic.read({"messages": history})
    reads = _reads(monkeypatch)
    history[2]["content"][0]["content"] = "changed in place"
    view = _anthropic.read({"messages": history})
    assert reads == []  # not frozen: no message is read through the memo at all
    assert view == _fresh({"messages": history})
    assert "changed in place" in str(view.messages)


_POOL = pytest_history(4, task="a pool of messages")


@settings(max_examples=200, deadline=None)
@given(
    st.booleans(),
    st.lists(st.lists(st.tuples(st.integers(0, len(_POOL) - 1), st.booleans())), max_size=4),
)
def test_lists_read_one_after_another_read_as_fresh_reads(
    frozen: bool, lists: list[list[tuple[int, bool]]]
):
    """Lists of the same message objects and of copies of them, read in turn, frozen or not:
    each view is the one a fresh read gives, whatever the list before it shared with it."""
    opening = _POOL[0]
    with frozen_bodies() if frozen else nullcontext():
        for picks in lists:
            messages = [opening, *(copy.deepcopy(_POOL[i]) if c else _POOL[i] for i, c in picks)]
            view = _anthropic.read({"messages": messages})
            assert view == _fresh({"messages": messages})


def test_a_kept_list_is_charged_the_text_it_holds():
    """The list keeps its messages alive after the other memos drop them: it is charged them."""
    kept = _reading._LISTS.size
    with frozen_bodies():
        _anthropic.read({"messages": [{"role": "user", "content": "x" * 1_000_000}]})
    assert _reading._LISTS.size - kept >= 3_000_000


# --- item lists whose reading carries state from item to item: Responses and Gemini ----------


def _item_reads(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[int]:
    """The indices of the items ``module``'s reading reads one by one from now on."""
    seen: list[int] = []
    one = module._Reading.item

    def counted(self: Any, out: Any, j: int, item: Any) -> None:
        seen.append(j)
        one(self, out, j, item)

    monkeypatch.setattr(module._Reading, "item", counted)
    return seen


def _responses_turns(n: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "fix the tests"}]
    for k in range(n):
        items += [
            {"type": "reasoning", "id": f"rs_{k}", "summary": [], "encrypted_content": "e"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"run {k}"}],
            },
            {
                "type": "function_call",
                "call_id": f"c{k}",
                "name": "shell",
                "arguments": '{"cmd": "pytest"}',
            },
            {"type": "function_call_output", "call_id": f"c{k}", "output": f"run {k}\nok"},
        ]
    return items


def test_a_responses_list_sent_again_with_more_reads_only_the_new_items(
    monkeypatch: pytest.MonkeyPatch,
):
    items = _responses_turns(4)
    with frozen_bodies():
        _openai_responses.read({"input": items[:9]})
        reads = _item_reads(monkeypatch, _openai_responses)
        view = _openai_responses.read({"input": items})
    assert reads == list(range(9, len(items)))
    assert view == _fresh({"input": items}, _openai_responses.read)


def test_a_responses_list_is_resumed_only_between_turns(monkeypatch: pytest.MonkeyPatch):
    """The last list ended inside a turn (a call not answered yet): the reading resumes at the
    turn's start, which the turn's message needs."""
    items = _responses_turns(3)
    with frozen_bodies():
        _openai_responses.read({"input": items[:8]})  # ends with the second turn's call
        reads = _item_reads(monkeypatch, _openai_responses)
        view = _openai_responses.read({"input": items})
    assert reads == list(range(5, len(items)))
    assert view == _fresh({"input": items}, _openai_responses.read)


def test_a_responses_list_is_not_resumed_past_an_output_named_by_an_alias(
    monkeypatch: pytest.MonkeyPatch,
):
    """A local shell's output named by its call item's ``id`` is read with the aliases of the
    whole list: items added later can name that call, so the reading resumes before it."""
    output = {"type": "local_shell_call_output", "id": "lsh_9", "output": "tests failed"}
    items = [{"role": "user", "content": "run it"}, output, {"role": "user", "content": "and?"}]
    call = {
        "type": "local_shell_call",
        "id": "lsh_9",
        "call_id": "c9",
        "action": {"type": "exec", "command": ["pytest"], "env": {}},
        "status": "completed",
    }
    with frozen_bodies():
        first = _openai_responses.read({"input": items})
        reads = _item_reads(monkeypatch, _openai_responses)
        later = _openai_responses.read({"input": [*items, call]})
    assert reads == [1, 2, 3]
    assert [m.role for m in first.messages] == ["user", "user"]
    assert later == _fresh({"input": [*items, call]}, _openai_responses.read)
    assert later.messages[1].tool_call_id == "c9"


def test_a_gemini_list_sent_again_with_more_reads_only_the_new_contents(
    monkeypatch: pytest.MonkeyPatch,
):
    """Calls without ids are numbered over the whole list; a resumed reading numbers on."""
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "fix it"}]}]
    for k in range(4):
        contents += [
            {"role": "model", "parts": [{"functionCall": {"name": "run", "args": {"n": k}}}]},
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "run", "response": {"output": f"run {k}"}}}
                ],
            },
        ]
    with frozen_bodies():
        _gemini.read({"contents": contents[:5]})
        reads = _item_reads(monkeypatch, _gemini)
        view = _gemini.read({"contents": contents})
    assert reads == [5, 6, 7, 8]
    assert view == _fresh({"contents": contents}, _gemini.read)
    assert [m.tool_call_id for m in view.messages if m.role == "tool"] == ["#1", "#2", "#3", "#4"]


_RESPONSES_POOL: list[Any] = [
    *_responses_turns(2)[1:],
    {"role": "developer", "content": "be brief"},
    {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch", "input": "*** Begin"},
    {"type": "custom_tool_call_output", "call_id": "p1", "output": "Done"},
    {
        "type": "local_shell_call",
        "id": "lsh_1",
        "call_id": "L1",
        "action": {"type": "exec", "command": ["ls"], "env": {}},
    },
    {"type": "local_shell_call_output", "id": "lsh_1", "output": "a.py"},
    {"type": "local_shell_call_output", "call_id": "L1", "output": "b.py"},
    {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [{"type": "input_text", "text": "x"}],
    },
    "not an item",
]

_GEMINI_POOL: list[Any] = [
    {"role": "model", "parts": [{"functionCall": {"name": "run", "args": {}}}, {"text": "ran"}]},
    {
        "role": "model",
        "parts": [{"functionCall": {"name": "grep", "id": "g1", "args": {"p": "x"}}}],
    },
    {
        "role": "user",
        "parts": [{"functionResponse": {"name": "run", "response": {"output": "ok"}}}],
    },
    {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "grep", "id": "g1", "response": {"result": "a:1"}}}
        ],
    },
    {
        "role": "user",
        "parts": [{"functionResponse": {"name": "run", "response": {"a": 1, "b": 2}}}],
    },
    {"role": "user", "parts": [{"text": "go on"}]},
    {"role": "model", "parts": [{"text": "thinking", "thought": True}]},
    {"role": ["not", "a", "role"], "parts": []},
    {"role": "tool", "parts": [{"text": "unknown role"}]},
    {
        "role": "function",
        "parts": [{"functionResponse": {"name": "run", "response": {"error": "no"}}}],
    },
]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["openai_responses", "gemini"]),
    st.booleans(),
    st.lists(
        st.lists(st.tuples(st.integers(0, len(_GEMINI_POOL) - 1), st.booleans()), max_size=10),
        max_size=4,
    ),
)
def test_item_lists_read_one_after_another_read_as_fresh_reads(
    api: str, frozen: bool, lists: list[list[tuple[int, bool]]]
):
    """Lists of the same item objects and of copies of them, read in turn, frozen or not: each
    view is the one a fresh read gives, whatever the list before it shared with it and wherever
    its reading rested."""
    pool, key, reader = (
        (_RESPONSES_POOL, "input", _openai_responses.read)
        if api == "openai_responses"
        else (_GEMINI_POOL, "contents", _gemini.read)
    )
    opening = {"role": "user", "content": "start"} if key == "input" else _GEMINI_POOL[5]
    previous: list[Any] = [opening]
    with frozen_bodies() if frozen else nullcontext():
        for picks in lists:
            # each list keeps a random part of the one before it, then adds items of the pool
            kept = previous[: len(previous) - len(picks) // 3]
            items = [
                *kept,
                *(
                    copy.deepcopy(pool[i % len(pool)]) if c else pool[i % len(pool)]
                    for i, c in picks
                ),
            ]
            view = reader({key: items})
            assert view == _fresh({key: items}, reader)
            previous = items


def _alike(history: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    """Another conversation that opens as ``history`` does (its first two messages, the very
    objects) and goes on with other results."""
    other = copy.deepcopy(history[2:])
    for message in other[::2]:  # the results
        message["content"][0]["content"] = f"{tag}: {message['content'][0]['content']}"
    return [*history[:2], *other]


def test_lists_of_one_opening_read_in_turn_each_read_only_their_new_messages(
    monkeypatch: pytest.MonkeyPatch,
):
    """A team's agents open alike (one system prompt, one task) and go on at once: each list
    resumes its own reading (with one kept list an opening, each pushed the other's out)."""
    histories = [pytest_history(4, task="one opening")]
    histories += [_alike(histories[0], tag) for tag in ("b", "c")]
    with frozen_bodies():
        for history in histories:
            _anthropic.read({"messages": history[:5]})
        reads = _reads(monkeypatch)
        views = [_anthropic.read({"messages": history}) for history in histories]
    assert reads == [5, 6, 7, 8] * 3
    assert views == [_fresh({"messages": history}) for history in histories]
