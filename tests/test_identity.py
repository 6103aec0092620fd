"""The identity-keyed LRU the proxy finds a re-sent message's derived values by."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tokenlean._identity import ByIdentity, leading, same_objects


def test_a_value_is_found_by_the_object_itself_not_an_equal_one() -> None:
    memo: ByIdentity[str] = ByIdentity(max_entries=10, max_bytes=1000)
    kept = {"role": "user", "content": "hi"}
    memo.put(kept, "text", 10)
    assert memo.get(kept) == "text"
    assert memo.get(dict(kept)) is None


def test_a_lookup_keeps_an_entry_among_the_most_recent() -> None:
    memo: ByIdentity[int] = ByIdentity(max_entries=2, max_bytes=1000)
    first, second, third = object(), object(), object()
    memo.put(first, 1, 1)
    memo.put(second, 2, 1)
    assert memo.get(first) == 1  # now the newest: the next put drops ``second``
    memo.put(third, 3, 1)
    assert (memo.get(first), memo.get(second), memo.get(third)) == (1, None, 3)


def test_a_lookup_whose_entry_a_put_drops_meanwhile_still_answers() -> None:
    """``get`` takes no lock: another thread's put may drop the entry between the lookup and
    the move to the end. Played here in one thread, at that very point."""

    class DroppedMeanwhile(OrderedDict[int, Any]):
        def get(self, key: int, default: Any = None) -> Any:
            found = super().get(key, default)
            self.pop(key, None)  # what a put on another thread did just then
            return found

    memo: ByIdentity[str] = ByIdentity(max_entries=10, max_bytes=1000)
    kept = object()
    memo.put(kept, "value", 10)
    memo._kept._items = DroppedMeanwhile(memo._kept._items)
    assert memo.get(kept) == "value"
    assert memo.get(kept) is None


def test_same_objects_counts_the_leading_items_that_are_the_very_objects():
    a, b, c = {"n": 1}, {"n": 2}, {"n": 3}
    assert same_objects([a, b, c], [a, b, c, {"n": 4}]) == 3
    assert same_objects([a, b, c], [a, dict(b), c]) == 1  # equal is not the same
    assert same_objects([a, b], [a]) == 1 and same_objects([], [a]) == 0


def test_leading_counts_the_true_flags_before_the_first_false_one():
    assert leading(iter([True, True, False, True])) == 2
    assert leading([True, True]) == 2 and leading([]) == 0 and leading([False]) == 0


@given(st.lists(st.booleans(), max_size=40))
def test_leading_is_the_count_of_true_flags_before_the_first_false_one(flags: list[bool]) -> None:
    expected = flags.index(False) if False in flags else len(flags)
    assert leading(iter(flags)) == expected
    assert leading(flags) == expected


def test_leading_stops_a_few_flags_past_the_first_false_one() -> None:
    """Comparing with a list of another conversation stops where they differ (soon), not at the
    end of a long history."""
    given = iter([True, False, *([True] * 1000)])
    assert leading(given) == 1
    assert len(list(given)) > 990
