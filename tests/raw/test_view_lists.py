"""A frozen message list re-sent with new messages after it takes the view of the messages it shares
with the last list in one step and reads only the others; every view is the one a fresh read
gives."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.data import pytest_history
from tokenlean.raw import _anthropic, _openai_chat, _reading, frozen_bodies
from tokenlean.raw._view import RawView


def _fresh(body: dict[str, Any], reader: Any = _anthropic.read) -> RawView:
    view = reader(copy.deepcopy(body))  # other objects, and not frozen: read from scratch
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
@given(st.lists(st.lists(st.tuples(st.integers(0, len(_POOL) - 1), st.booleans())), max_size=4))
def test_lists_read_one_after_another_read_as_fresh_reads(lists: list[list[tuple[int, bool]]]):
    """Lists of the same message objects and of copies of them, read in turn: each view is
    the one a fresh read gives, whatever the list before it shared with it."""
    opening = _POOL[0]
    with frozen_bodies():
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
