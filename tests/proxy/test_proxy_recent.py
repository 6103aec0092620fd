"""A re-sent history is compared with the last one, not parsed again, and reads the same."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenlean.proxy import _scan
from tokenlean.proxy._recent import KeptList, RecentLists
from tokenlean.proxy._scan import RECENT, ScannedBody, scan_body


def _body(messages: list[object], **top: object) -> bytes:
    return json.dumps({"model": "m", **top, "messages": messages}).encode()


def _fresh(data: bytes) -> ScannedBody:
    RECENT.clear()
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


def test_the_lists_kept_are_bounded_in_number_and_in_bytes():
    recent = RecentLists(max_lists=2, max_bytes=10_000)
    for n in range(3):
        recent.put(_kept({"n": n}))
    assert recent.get('{"n": 0}') is None and recent.get('{"n": 2}') is not None
    recent.put(_kept("x" * 20_000))  # larger than the whole bound
    assert recent.get(json.dumps("x" * 20_000)) is None
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


def test_a_kept_list_whose_last_item_goes_on_is_read_item_by_item():
    _fresh(_body([{"role": "user"}, 1]))
    again = scan_body(_body([{"role": "user"}, 12]), "messages")
    assert again is not None
    assert again.values["messages"] == [{"role": "user"}, 12]
    _same_reading(again, _fresh(_body([{"role": "user"}, 12])))


# few values, so that bodies often share messages; a kept number may start a new one (1, 12)
_VALUES = st.sampled_from([1, 12, 1.5, "a", ",]", {"role": "user", "content": "a"}])


@settings(max_examples=400, deadline=None)
@given(
    before=st.lists(_VALUES, min_size=1, max_size=4),
    after=st.lists(_VALUES, max_size=3),
    keep=st.integers(0, 4),
    spacing=st.sampled_from([None, 0, 1]),
)
def test_a_body_read_after_another_reads_as_a_fresh_parse(
    before: list[object], after: list[object], keep: int, spacing: int | None
):
    """Whatever the kept list and the new body share (a prefix, a first message, separators),
    the reading is the one a fresh parse gives."""
    _fresh(_body(before))
    later = json.dumps({"messages": [*before[: max(keep, 1)], *after]}, indent=spacing).encode()
    again = scan_body(later, "messages")
    assert again is not None
    _same_reading(again, _fresh(later))


def test_fresh_counts_the_characters_of_the_messages_parsed_anew():
    history = [{"role": "user", "content": f"turn {n} " * 50} for n in range(10)]
    first = _fresh(_body(history))
    assert first.fresh == sum(len(text) for _, text in first.items)
    again = scan_body(_body(history), "messages")
    assert again is not None and again.fresh == 0
    new = {"role": "user", "content": "one more"}
    more = scan_body(_body([*history, new]), "messages")
    assert more is not None and more.fresh == len(json.dumps(new))
