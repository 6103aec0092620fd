"""Bodies that may be mutated (an SDK user's, the LiteLLM plug-in's) are read by content: a history
sent again as new objects reads only what is new or changed, a message changed in place is read
again, and nothing kept points into the caller's objects."""

from __future__ import annotations

import copy
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.data import pytest_history
from tests.raw.test_view_lists import (
    _GEMINI_POOL,
    _POOL,
    _RESPONSES_POOL,
    _alike,
    _fresh,
    nothing_kept,
)
from tokenlean._caches import BoundedLru, Openings
from tokenlean.raw import (
    RawSettings,
    _anthropic,
    _gemini,
    _openai_chat,
    _openai_responses,
    _reading,
    rewrite_request,
)


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The indices of the messages of a list of messages read from now on."""
    seen: list[int] = []
    one = _reading._Messages.item

    def counted(self: Any, out: Any, j: int, item: Any) -> int | None:
        seen.append(j)
        return one(self, out, j, item)

    monkeypatch.setattr(_reading._Messages, "item", counted)
    return seen


def test_a_history_sent_again_as_new_objects_reads_only_the_new_messages(
    monkeypatch: pytest.MonkeyPatch,
):
    history = pytest_history(4, task="sent again as new objects")
    _anthropic.read({"messages": copy.deepcopy(history[:5])})
    reads = _reads(monkeypatch)
    view = _anthropic.read({"messages": copy.deepcopy(history)})
    assert reads == [5, 6, 7, 8]  # before: every message, on every call
    assert view == _fresh({"messages": history})


def test_a_message_changed_in_place_is_read_again_from_there(monkeypatch: pytest.MonkeyPatch):
    history = pytest_history(3, task="changed in place")
    _openai_chat.read({"messages": history})
    reads = _reads(monkeypatch)
    history[4]["content"] = "changed in place"
    view = _openai_chat.read({"messages": history})
    assert reads == list(range(4, len(history)))
    assert view == _fresh({"messages": history}, _openai_chat.read)
    assert "changed in place" in str(view.messages[4])


def test_nothing_kept_points_into_the_callers_objects():
    """The view is read from a private copy: a caller who changes a message's objects after
    the call cannot change what a later call with the original content is given."""
    history = pytest_history(2, task="private copies")
    original = copy.deepcopy(history)
    first = _anthropic.read({"messages": history})
    assert first is not None
    call = next(m for m in first.messages if m.tool_calls).tool_calls[0]
    blocks = [b for m in history if isinstance(m["content"], list) for b in m["content"]]
    calls = [b for b in blocks if b["type"] == "tool_use"]
    assert calls and all(call.args is not b["input"] for b in calls)
    calls[0]["input"]["command"] = "rm -rf /"  # the caller's object, after the call
    again = _anthropic.read({"messages": copy.deepcopy(original)})
    assert again == _fresh({"messages": original})
    assert "rm -rf" not in str(again.messages) and call.args["command"] != "rm -rf /"


def test_an_item_marshal_cannot_write_is_read_and_nothing_from_it_on_is_kept(
    monkeypatch: pytest.MonkeyPatch,
):
    history: list[Any] = pytest_history(3, task="an ordered dict")
    history[4] = OrderedDict(history[4])  # not a plain dict: no content key
    _anthropic.read({"messages": history})
    reads = _reads(monkeypatch)
    view = _anthropic.read({"messages": copy.copy(history)})
    assert reads == list(range(4, len(history)))  # kept up to the message before it
    assert view == _fresh({"messages": history})


def test_lists_of_the_same_opening_and_other_contents_take_only_what_they_share(
    monkeypatch: pytest.MonkeyPatch,
):
    one = pytest_history(3, task="same opening")
    other = copy.deepcopy(one)
    other[3]["content"][0]["text"] = "another turn"
    _anthropic.read({"messages": one})
    reads = _reads(monkeypatch)
    view = _anthropic.read({"messages": other})
    assert reads == list(range(3, len(other)))
    assert view == _fresh({"messages": other})


def test_a_kept_list_is_charged_its_keys_and_view(monkeypatch: pytest.MonkeyPatch):
    # a cache of its own: the shared one may be full from earlier tests, and evict as it keeps
    bound = _reading._CONTENTS.max_bytes
    fresh = Openings(BoundedLru(max_entries=1024, max_bytes=bound), _reading._ListRead.length)
    monkeypatch.setattr(_reading, "_CONTENTS", fresh)
    _anthropic.read({"messages": [{"role": "user", "content": "y" * 1_000_000}]})
    assert fresh.size >= 4_000_000  # the key, and the view three times


def test_a_growing_history_rewritten_as_new_objects_is_rewritten_as_from_scratch(tmp_path: Path):
    """The whole rewrite (shortening included) of each turn of a growing history, sent as new
    objects every time, is the one a rewrite with nothing kept gives."""
    history = pytest_history(6, task="rewritten as from scratch")
    raw = RawSettings(originals_dir=tmp_path / "originals")
    for end in range(3, len(history) + 1, 2):
        body = {"model": "m", "max_tokens": 10, "messages": copy.deepcopy(history[:end])}
        got = rewrite_request("anthropic", copy.deepcopy(body), settings=raw)
        raw.planner.forget()
        with nothing_kept():
            expected = rewrite_request("anthropic", copy.deepcopy(body), settings=raw)
        assert got == expected


_EDITS = st.lists(
    st.tuples(st.sampled_from(["append", "edit", "delete", "copy"]), st.integers(0, 40)),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["anthropic", "openai_responses", "gemini"]), _EDITS)
def test_one_list_changed_in_place_between_reads_reads_as_fresh_reads(
    api: str, edits: list[tuple[str, int]]
):
    """An SDK user's list, read after each change made in place (an item appended, an item's
    text changed, an item removed, the list rebuilt of copies): each view is the one a fresh
    read gives."""
    pool, key, reader = {
        "anthropic": (_POOL, "messages", _anthropic.read),
        "openai_responses": (_RESPONSES_POOL, "input", _openai_responses.read),
        "gemini": (_GEMINI_POOL, "contents", _gemini.read),
    }[api]
    items: list[Any] = [copy.deepcopy(pool[0])]
    for edit, n in edits:
        if edit == "append":
            items.append(copy.deepcopy(pool[n % len(pool)]))
        elif edit == "edit" and isinstance(items[n % len(items)], dict):
            _change_a_text(items[n % len(items)], f"changed {n}")
        elif edit == "delete" and len(items) > 1:
            del items[n % len(items)]
        elif edit == "copy":
            items[:] = copy.deepcopy(items)
        assert reader({key: items}) == _fresh({key: items}, reader)


def _change_a_text(value: Any, text: str) -> bool:
    """Change the first string of ``value`` found under a text-like key, in place."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("text", "content", "output") and isinstance(v, str):
                value[k] = text
                return True
            if _change_a_text(v, text):
                return True
    elif isinstance(value, list):
        return any(_change_a_text(v, text) for v in value)
    return False


def test_lists_of_one_opening_sent_in_turn_each_read_only_their_new_messages(
    monkeypatch: pytest.MonkeyPatch,
):
    """A team's agents open alike and go on at once, through the LiteLLM plug-in or an SDK: each
    list resumes its own reading (with one kept list an opening, each pushed the other's out)."""
    histories = [pytest_history(4, task="one opening, by content")]
    histories += [_alike(histories[0], tag) for tag in ("b", "c")]
    for history in histories:
        _anthropic.read({"messages": copy.deepcopy(history[:5])})
    reads = _reads(monkeypatch)
    views = [_anthropic.read({"messages": copy.deepcopy(history)}) for history in histories]
    assert reads == [5, 6, 7, 8] * 3
    assert views == [_fresh({"messages": history}) for history in histories]
