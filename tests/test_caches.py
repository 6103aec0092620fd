"""Memos keyed by texts are bounded in bytes, measured with real sizes (issue 45, item 3): an
``lru_cache`` of 4,096 entries held 4,096 whole tool outputs and what was computed from them."""

from __future__ import annotations

import copy
import gc
import marshal
import operator
import pickle
import sys
import tracemalloc
from collections import OrderedDict
from collections.abc import Callable

from tokenlean._caches import (
    CACHE_MAX_BYTES,
    BoundedLru,
    BoundedMemo,
    Openings,
    byte_bounded,
    content_key,
    held_bytes,
)
from tokenlean._identity import leading
from tokenlean.loop_guard._canonical import canonical_text
from tokenlean.prices import _resolved
from tokenlean.shorten._cells import cell_calls
from tokenlean.shorten._detect import view_content
from tokenlean.shorten._parts import _judge
from tokenlean.shorten._reads import _compound
from tokenlean.shorten._seen import _lines_of, _view_lines_of
from tokenlean.token_saving._head_tail import _text_digest
from tokenlean.tokens import DEFAULT_COUNTER, MemoCounter

MiB = 2**20


def _output(k: int, size: int = MiB) -> str:
    """``size`` characters of a distinct test log (line numbers vary, as in a real one)."""
    lines = (
        f"run {k} line {i}: tests/test_mod.py::test_{i % 97} PASSED [ 42%]"
        for i in range(size // 40)
    )
    return "\n".join(lines)[:size]


def _held_after(calls: Callable[[], None]) -> int:
    """Bytes still allocated after ``calls`` ran (what the memos it filled keep alive)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        calls()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_the_seen_lines_memo_holds_at_most_its_bytes_however_many_outputs() -> None:
    """Before: 16 distinct 1 MB outputs left about 56 MB in the memo of their lines (and its
    4,096 entries could hold 4,096 of them)."""
    _lines_of.cache_clear()
    for k in range(16):
        _lines_of(_output(k), 8)
    assert _lines_of.size <= CACHE_MAX_BYTES
    assert _lines_of(_output(15), 8) is _lines_of(_output(15), 8)  # the newest is kept
    _lines_of.cache_clear()


def test_what_a_memo_charges_is_what_it_keeps_alive() -> None:
    _lines_of.cache_clear()
    held = _held_after(lambda: [_lines_of(_output(k), 8) for k in range(3)] and None)
    assert 0.9 * held <= _lines_of.size <= 1.1 * held
    _lines_of.cache_clear()


def test_every_memo_keyed_by_a_text_is_bounded_in_bytes() -> None:
    memos = [_lines_of, _view_lines_of, view_content, canonical_text, _text_digest]
    memos += [_compound, cell_calls, _judge, _resolved, MemoCounter(DEFAULT_COUNTER)._memo]
    assert [type(m) for m in memos] == [BoundedMemo] * len(memos)
    assert {m.max_bytes for m in memos} == {CACHE_MAX_BYTES}


def test_a_token_counters_memo_holds_at_most_its_bytes() -> None:
    counter = MemoCounter(DEFAULT_COUNTER, max_bytes=2 * MiB)
    counts = [counter.count(_output(k, 512 * 1024)) for k in range(12)]
    assert counter._memo.size <= 2 * MiB
    assert counts == [DEFAULT_COUNTER.count(_output(k, 512 * 1024)) for k in range(12)]


def test_a_memo_is_only_a_cache() -> None:
    calls: list[str] = []

    @byte_bounded(max_bytes=3 * MiB, max_entries=100)
    def lines(text: str) -> int:
        calls.append(text[:12])
        return text.count("\n")

    texts = [_output(k) for k in range(5)]
    assert [lines(t) for t in texts] == [t.count("\n") for t in texts]
    assert lines(texts[-1]) == texts[-1].count("\n") and len(calls) == 5  # the newest stayed
    assert lines(texts[0]) == texts[0].count("\n") and len(calls) == 6  # the oldest went
    assert lines.size <= 3 * MiB
    huge = _output(9, 4 * MiB)  # larger than the whole bound: computed, never kept
    assert lines(huge) == lines(huge) and len(calls) == 8


def test_a_memo_copies_as_itself_and_pickles_empty() -> None:
    memo: BoundedMemo[[str], int] = BoundedMemo(len, max_bytes=MiB, max_entries=8)
    memo("some text")
    assert copy.deepcopy(memo) is memo and copy.copy(memo) is memo
    thawed = pickle.loads(pickle.dumps(memo))
    assert thawed.size == 0 and thawed("some text") == 9 and thawed.max_bytes == MiB


def test_held_bytes_counts_what_a_value_holds() -> None:
    text = "€" * 1000  # two bytes a character in memory
    assert held_bytes(text) > 2000
    assert held_bytes({"k": [text, (text,)]}) > 4000


def test_a_value_nested_deeper_than_the_interpreter_recurses_is_measured() -> None:
    """A body a client nests 100,000 deep (the proxy reads it as it can) is measured, not an
    error: the walk keeps its own stack."""
    deep: list[object] = ["leaf"]
    for _ in range(100_000):
        deep = [deep]
    assert held_bytes(deep) > 100_000 * sys.getsizeof([])


def test_a_content_key_is_the_same_for_equal_values_and_none_for_other_types():
    text = "x" * 100
    held_elsewhere = [text, text]  # version 3 on would write a shared object differently
    one = content_key({"a": [text, 1, 1.5, True, None]})
    assert one == content_key({"a": ["".join(["x"] * 100), 1, 1.5, True, None]})
    assert one is not None and marshal.loads(one) == {"a": [text, 1, 1.5, True, None]}
    assert content_key({"a": [text, True]}) != content_key({"a": [text, 1]})
    assert content_key({"b": 1, "a": 2}) != content_key({"a": 2, "b": 1})  # order is content
    assert held_elsewhere and content_key(OrderedDict(a=1)) is None
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    assert content_key(deep) is None


# -- lists kept by their opening ----------------------------------------------------------------


def _openings(per_opening: int = 4, max_bytes: int = 1000) -> Openings[tuple[str, ...]]:
    return Openings(BoundedLru(max_entries=8, max_bytes=max_bytes), len, per_opening)


def _shared_with(items: tuple[str, ...]) -> Callable[[tuple[str, ...]], int]:
    return lambda kept: leading(map(operator.eq, kept, items))


def test_conversations_of_one_opening_each_find_their_own_list() -> None:
    """Two conversations that open alike (one system prompt) went on at once: with one list an
    opening, each put pushed the other's out and every request was read in full."""
    lists = _openings()
    a, b = ("system", "task a", "reply a"), ("system", "task b", "reply b")
    for items in (a, b):
        lists.put("system", items, 10, *lists.find("system", _shared_with(items)))
    assert lists.find("system", _shared_with((*a, "more"))) == (a, 3)
    assert lists.find("system", _shared_with((*b, "more"))) == (b, 3)


def test_a_list_put_in_place_of_the_one_it_continues_leaves_the_others() -> None:
    lists = _openings()
    a, b = ("s", "a"), ("s", "b")
    lists.put("s", a, 10)
    lists.put("s", b, 10)
    longer = (*a, "a2", "a3")
    lists.put("s", longer, 20, *lists.find("s", _shared_with(longer)))
    assert lists.store.get("s") == ((longer, 20), (b, 10))
    assert lists.size == 30


def test_an_opening_keeps_its_newest_lists_within_its_bound_and_the_stores_bytes() -> None:
    lists = _openings(per_opening=3, max_bytes=100)
    for n in range(5):
        lists.put("s", ("s", str(n)), 10)
    assert [value for value, _ in lists.store.get("s") or ()] == [
        ("s", "4"),
        ("s", "3"),
        ("s", "2"),
    ]
    lists.put("s", ("s", "big"), 90)  # with the others, over the store's bound: the oldest go
    assert [value for value, _ in lists.store.get("s") or ()] == [("s", "big"), ("s", "4")]
    assert lists.size == 100
    lists.put("s", ("s", "huge"), 101)  # over the bound alone: not kept, the others stay
    assert lists.find("s", lambda kept: 0)[0] == ("s", "big")


def test_the_list_sharing_the_most_is_found_and_the_newest_of_equals() -> None:
    lists = _openings()
    for items in (("s", "x", "1"), ("s", "x", "2"), ("s", "y")):
        lists.put("s", items, 1)
    assert lists.find("s", _shared_with(("s", "x", "1", "go")))[0] == ("s", "x", "1")
    assert lists.find("s", _shared_with(("s", "z")))[0] == ("s", "y")  # one item each: the newest
    assert lists.find("other", _shared_with(("other",))) == (None, 0)


def test_a_list_continues_one_it_holds_whole_or_but_for_its_newest_item() -> None:
    """A turn later; the cache breakpoint moved: in place of the list. Another conversation,
    or an earlier message edited (a branch): beside it."""
    kept = ("s", "1", "2", "3", "4")
    for items, replaced in [
        ((*kept, "5"), True),
        ((*kept[:-1], "4 moved", "5"), True),
        ((*kept[:-2], "3 edited", "4"), False),
        (("s", "other"), False),
    ]:
        lists = _openings()
        lists.put("s", kept, 1)
        lists.put("s", items, 1, kept, _shared_with(items)(kept))
        assert [value for value, _ in lists.store.get("s") or ()] == (
            [items] if replaced else [items, kept]
        )
