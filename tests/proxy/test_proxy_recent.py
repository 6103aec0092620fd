"""A re-sent history is compared with the last one, not parsed again, and reads the same."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenlean.proxy import _scan
from tokenlean.proxy._recent import KeptList, RecentLists, RecentValues
from tokenlean.proxy._scan import RECENT, VALUES, ScannedBody, scan_body


def _body(messages: list[object], **top: object) -> bytes:
    return json.dumps({"model": "m", **top, "messages": messages}).encode()


def _fresh(data: bytes) -> ScannedBody:
    RECENT.clear()
    VALUES.clear()
    scanned = scan_body(data, "messages")
    assert scanned is not None
    return scanned


def _same_reading(got: ScannedBody, want: ScannedBody) -> None:
    assert got.values == want.values
    assert got.texts == want.texts
    assert got.items == want.items
    assert got.spans == want.spans
    assert got.item_spans == want.item_spans


def test_a_history_sent_again_with_more_reads_as_a_fresh_parse_and_shares_the_old_values():
    history = [{"role": "user", "content": f"turn {n} " * 50} for n in range(20)]
    first = _fresh(_body(history[:10]))
    later = _body(history, system="moved along")
    again = scan_body(later, "messages")
    assert again is not None
    _same_reading(again, _fresh(later))
    shared = [a is b for (a, _), (b, _) in zip(again.items, first.items, strict=False)]
    # the first is read (it is the key), then taken too: every value is the one kept
    assert shared == [True] * 10


def test_a_message_changed_in_the_middle_is_parsed_and_the_rest_still_reused():
    history = [{"role": "user", "content": f"turn {n}"} for n in range(6)]
    _fresh(_body(history))
    changed = [*history[:3], {"role": "user", "content": "edited"}, *history[4:]]
    data = json.dumps({"messages": changed}, indent=1).encode()  # other spacing too
    again = scan_body(data, "messages")
    assert again is not None
    _same_reading(again, _fresh(data))
    assert again.values["messages"][3] == {"role": "user", "content": "edited"}


def test_a_kept_text_that_is_only_the_start_of_a_longer_value_is_no_match():
    _fresh(_body([{"role": "user"}, 1, "x"]))
    again = scan_body(_body([{"role": "user"}, 12, "x"]), "messages")
    assert again is not None
    assert again.values["messages"] == [{"role": "user"}, 12, "x"]


def _kept(value: object) -> KeptList:
    text = json.dumps(value)
    return KeptList.of([(value, text)], text, [(0, len(text))])


def _got(recent: RecentLists, first: str) -> KeptList | None:
    return recent.find(first, lambda kept: 0)[0]


def test_the_lists_kept_are_bounded_in_number_and_in_bytes():
    recent = RecentLists(max_lists=2, max_bytes=10_000)
    for n in range(3):
        recent.put(_kept({"n": n}))
    assert _got(recent, '{"n": 0}') is None and _got(recent, '{"n": 2}') is not None
    recent.put(_kept("x" * 20_000))  # larger than the whole bound
    assert _got(recent, json.dumps("x" * 20_000)) is None
    assert 0 < recent.size <= 10_000


def test_a_history_sent_again_as_it_was_is_taken_whole_without_a_step_per_message(
    monkeypatch: pytest.MonkeyPatch,
):
    history = [{"role": "user", "content": f"turn {n} " * 50} for n in range(20)]
    _fresh(_body(history))
    asked: list[int] = []
    known = _scan._known

    def counted(*args: object) -> object:
        asked.append(1)
        return known(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_scan, "_known", counted)
    new = {"role": "user", "content": "one more"}
    later = _body([*history, new])
    again = scan_body(later, "messages")
    assert again is not None and again.fresh == len(json.dumps(new))
    assert len(asked) == 2  # the first message (the key) and the new one: none of the rest
    _same_reading(again, _fresh(later))


def test_a_history_whose_newest_message_changed_takes_the_others_at_once(
    monkeypatch: pytest.MonkeyPatch,
):
    """A client moves its cache breakpoint to the newest message: the one before loses it."""
    history = [{"role": "user", "content": f"turn {n} " * 50} for n in range(20)]
    marked = {**history[-1], "cache_control": {"type": "ephemeral"}}
    _fresh(_body([*history[:-1], marked]))
    asked: list[int] = []
    known = _scan._known

    def counted(known_items: object, k: int, *args: object) -> object:
        asked.append(k)
        return known(known_items, k, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(_scan, "_known", counted)
    new = {"role": "user", "content": "one more", "cache_control": {"type": "ephemeral"}}
    later = _body([*history, new])
    again = scan_body(later, "messages")
    assert again is not None
    assert asked == [0, 19, 20]  # the key, the changed message and the new one
    assert again.fresh == len(json.dumps(history[-1])) + len(json.dumps(new))
    _same_reading(again, _fresh(later))


def test_a_new_item_where_blanks_were_is_read():
    """Each kept item is compared with the separator that followed it, so an item put where
    there were blanks (the next one at the same place) is found, also after the list grew."""
    a, b, c = (json.dumps({"role": "user", "content": x}, separators=(",", ":")) for x in "abc")

    def body(items: str) -> bytes:
        return ('{"messages": [' + items + "]}").encode()

    _fresh(body(f"{a}, {b}"))
    assert scan_body(body(f"{a}, {b},    {c}"), "messages") is not None
    again = scan_body(body(f"{a}, {b}, 1, {c}"), "messages")
    assert again is not None
    assert again.values["messages"][2] == 1
    _same_reading(again, _fresh(body(f"{a}, {b}, 1, {c}")))


def test_a_kept_list_whose_last_item_goes_on_is_read_item_by_item():
    _fresh(_body([{"role": "user"}, 1]))
    again = scan_body(_body([{"role": "user"}, 12]), "messages")
    assert again is not None
    assert again.values["messages"] == [{"role": "user"}, 12]
    _same_reading(again, _fresh(_body([{"role": "user"}, 12])))


# few values, so that bodies often share messages; a kept number may start a new one (1, 12)
_VALUES = st.sampled_from([1, 12, 1.5, "a", ",]", {"role": "user", "content": "a"}])


_BODIES = st.tuples(st.integers(0, 4), st.lists(_VALUES, max_size=3), st.sampled_from([None, 0, 1]))


@settings(max_examples=400, deadline=None)
@given(first=st.lists(_VALUES, min_size=1, max_size=4), then=st.lists(_BODIES, max_size=3))
def test_bodies_read_one_after_another_read_as_fresh_parses(
    first: list[object], then: list[tuple[int, list[object], int | None]]
):
    """Each body keeps some messages of the one before (at least its first), adds others, and
    may space them otherwise: whatever it shares with the kept list, the reading is the one a
    fresh parse gives."""
    _fresh(_body(first))
    messages = first
    for keep, added, spacing in then:
        messages = [*messages[: max(keep, 1)], *added]
        data = json.dumps({"messages": messages}, indent=spacing).encode()
        again = scan_body(data, "messages")
        assert again is not None
        wanted = scan_body(data, "messages")  # read once more: from the list just kept
        RECENT.clear()
        VALUES.clear()
        fresh = scan_body(data, "messages")
        assert again is not None and wanted is not None and fresh is not None
        _same_reading(again, fresh)
        _same_reading(wanted, fresh)
        scan_body(data, "messages")  # kept again, for the next body


_TOOLS = [{"name": f"tool_{n}", "input_schema": {"type": "object"}} for n in range(60)]


def test_a_long_value_sent_again_is_the_kept_one_and_reads_as_a_fresh_parse():
    first = _fresh(_body([{"role": "user"}], tools=_TOOLS, system="s" * 3000))
    later = _body([{"role": "user"}, 1], tools=_TOOLS, system="s" * 3000)
    again = scan_body(later, "messages")
    assert again is not None
    assert again.values["tools"] is first.values["tools"]
    assert again.texts["tools"] is first.texts["tools"]
    assert again.values["system"] is first.values["system"]
    _same_reading(again, _fresh(later))


def test_a_long_value_that_changed_or_goes_on_is_parsed():
    _fresh(_body([], tools=_TOOLS, limit=int("7" * 2100)))
    more = _body([], tools=[*_TOOLS[:-1], {"name": "other"}], limit=int("7" * 2101))
    again = scan_body(more, "messages")
    assert again is not None
    assert again.values["tools"][-1] == {"name": "other"}
    assert again.texts["limit"] == "7" * 2101
    _same_reading(again, _fresh(more))


def test_the_values_kept_are_long_ones_bounded_in_number_and_in_bytes():
    values = RecentValues(max_values=2, max_bytes=40_000, min_chars=100)
    values.put("system", "short", "short")
    assert values.candidates("system") == []
    for n in range(3):
        values.put("system", f'"{n}{"x" * 200}"', n)
    assert [v for _, v in values.candidates("system")] == [2, 1]  # the most recent first
    values.put("tools", "[" + "1," * 20_000 + "1]", [1] * 20_001)  # over the bytes
    assert values.candidates("tools") == []
    assert 0 < values.size <= 40_000


@pytest.mark.parametrize("conversations", [3, 100])
def test_conversations_that_open_alike_each_take_their_own_history_at_once(conversations: int):
    """A team's agents open alike (one system prompt) and go on at once: each history sent again
    is compared with its own, and only its new message is parsed (with one list an opening,
    each put pushed the other's out, and every body of both was parsed in full; with 64 lists
    an opening, a hundred conversations in turn did so too)."""
    system = {"role": "system", "content": "You are a coding agent. " * 20}
    histories = [[system, *({"role": "user", "content": f"{who} {n} " * 50} for n in range(10))]
                 for who in range(conversations)]  # fmt: skip
    _fresh(_body(histories[0]))
    for history in histories[1:]:
        scan_body(_body(history), "messages")
    for turn in range(3):
        for history in histories:
            history.append({"role": "user", "content": f"turn {turn} of {history[1]['content']}"})
            again = scan_body(_body(history), "messages")
            assert again is not None and again.fresh == len(json.dumps(history[-1]))
            _same_reading(again, _fresh(_body(history)))
            for other in histories:  # _fresh forgot them: kept again as they were
                scan_body(_body(other), "messages")
