"""A re-sent history is compared with the last one, not parsed again, and reads the same."""

from __future__ import annotations

import json

from tokenlean.proxy._recent import RecentLists
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


def test_the_lists_kept_are_bounded_in_number_and_in_bytes():
    recent = RecentLists(max_lists=2, max_bytes=10_000)
    for n in range(3):
        recent.put([({"n": n}, f'{{"n":{n}}}')])
    assert recent.get('{"n":0}') == [] and recent.get('{"n":2}') != []
    recent.put([("x" * 20_000, '"' + "x" * 20_000 + '"')])  # larger than the whole bound
    assert recent.get('"' + "x" * 20_000 + '"') == []
    assert 0 < recent.size <= 10_000


def test_fresh_counts_the_characters_of_the_messages_parsed_anew():
    history = [{"role": "user", "content": f"turn {n} " * 50} for n in range(10)]
    first = _fresh(_body(history))
    assert first.fresh == sum(len(text) for _, text in first.items)
    again = scan_body(_body(history), "messages")
    assert again is not None and again.fresh == 0
    new = {"role": "user", "content": "one more"}
    more = scan_body(_body([*history, new]), "messages")
    assert more is not None and more.fresh == len(json.dumps(new))
