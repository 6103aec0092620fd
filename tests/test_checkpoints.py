"""The planner's memo is bounded in bytes, measured with real sizes, and only ever a cache
(issue 45, item 3: 100 KB outputs levelled off near 345 MB, 30 MB bodies added 32 MB each)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenlean import _checkpoints
from tokenlean._checkpoints import (
    _CHAINS,
    MEMO_MAX_BYTES,
    Checkpoint,
    Memo,
    chain_bytes,
    prefix_digests,
)
from tokenlean.raw import RawSettings, rewrite_request
from tokenlean.store import Original, make_handle
from tokenlean.transcript import Message, ToolCall

MiB = 2**20
POLICY = "policy"


def _log(k: int, size: int) -> str:
    """``size`` characters of a test log, distinct for each ``k``."""
    line = f"run {k}: tests/test_mod.py::test_case PASSED in 0.01s [ 42%]\n"
    return line * (size // len(line))


def _checkpoint(k: int, size: int, parent: Checkpoint[Original, str] | None = None) -> Checkpoint:
    """What planning one long result holds: its original and its lines shown."""
    text = _log(k, size)
    original = Original(make_handle("o", text), text, "bash", f"call-{k}")
    lines = frozenset(f"{line} #{i}" for i, line in enumerate(text.splitlines()[:200]))
    end = 1 if parent is None else parent.end + 1
    return Checkpoint(parent, end, (original,), lines, {}, 0, 0)


def _digest(k: int) -> bytes:
    return k.to_bytes(8, "big")


def _traced(make: Iterator[None]) -> int:
    """Bytes still allocated after running ``make`` through (what it keeps alive)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in make:
            pass
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_distinct_one_megabyte_bodies_never_hold_more_than_the_cap() -> None:
    memo: Memo[str, Original, str] = Memo(256, max_bytes=10 * MiB)

    def fill() -> Iterator[None]:
        for k in range(60):
            memo.put(POLICY, _digest(k), _checkpoint(k, MiB))
            yield None

    held = _traced(fill())
    assert memo.size <= 10 * MiB
    assert held <= 10.5 * MiB  # what the estimate misses is small (before: 60 MiB held)
    assert 6 <= len(memo._items) < 60
    assert memo.resume(POLICY, [b"", _digest(59)])[0] == 1  # the newest is kept
    assert memo.resume(POLICY, [b"", _digest(0)]) == (0, None)  # the oldest went


def test_a_growing_conversation_is_charged_its_whole_chain() -> None:
    """A checkpoint keeps its parents alive: the memo counts them, so evicting the old entries
    of a conversation whose newest entry stays does not pretend to free them."""
    memo: Memo[str, Original, str] = Memo(256, max_bytes=8 * MiB)
    chain: list[int] = []

    def grow() -> Iterator[None]:
        node = None
        for k in range(30):
            node = _checkpoint(k, 512 * 1024, node)
            memo.put(POLICY, _digest(k), node)
            yield None
        assert node is not None
        chain.append(chain_bytes(node))

    held = _traced(grow())
    assert memo.size <= 8 * MiB and held <= 8.5 * MiB  # before: the 15 MiB chain
    assert chain[0] > 8 * MiB  # so its newest entry is not kept
    assert memo.resume(POLICY, [b"", _digest(29)]) == (0, None)


def test_a_chain_larger_than_the_cap_is_not_kept() -> None:
    memo: Memo[str, Original, str] = Memo(256, max_bytes=MiB)
    memo.put(POLICY, _digest(1), _checkpoint(1, 100_000))
    memo.put(POLICY, _digest(2), _checkpoint(2, 2 * MiB))
    assert [memo.resume(POLICY, [b"", _digest(k)])[0] for k in (1, 2)] == [1, 0]
    memo.clear()
    assert memo.size == 0


def test_the_default_cap_holds_what_a_planner_keeps(tmp_path: Path) -> None:
    """The memo's charge tracks what the planner really keeps (real 100 KB results)."""
    settings = RawSettings(originals_dir=tmp_path)
    memo = settings.planner._memo
    assert memo.max_bytes == MEMO_MAX_BYTES == 128 * MiB

    def plan() -> Iterator[None]:
        for k in range(12):
            rewrite_request("anthropic", _body(k), settings=settings)
            yield None

    _traced(plan())
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    charged = memo.size
    memo.clear()
    gc.collect()
    freed = before - tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert charged > 12 * 100_000 and freed <= charged * 1.1


def _body(k: int) -> dict[str, object]:
    call = {"type": "tool_use", "id": f"t{k}", "name": "bash", "input": {"command": "pytest"}}
    result = {"type": "tool_result", "tool_use_id": f"t{k}", "content": _log(k, 100_000)}
    messages = [
        {"role": "user", "content": f"task {k}"},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
    ]
    return {"model": "m", "max_tokens": 10, "messages": messages}


def _conversation(turns: int) -> dict[str, object]:
    messages: list[object] = [{"role": "user", "content": "fix the tests"}]
    for k in range(turns):
        call = {"type": "tool_use", "id": f"t{k}", "name": "bash", "input": {"command": "pytest"}}
        result = {"type": "tool_result", "tool_use_id": f"t{k}", "content": _log(k, 100_000)}
        messages += [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
    return {"model": "m", "max_tokens": 10, "messages": messages}


def test_a_memo_that_evicts_plans_what_a_cold_planner_does(tmp_path: Path) -> None:
    """Eviction only costs time: under a cap of about one turn's chain, every request of a
    growing conversation is rewritten to the bytes a planner with no memo writes."""
    tight = RawSettings(originals_dir=tmp_path)
    tight.planner._memo = Memo(256, max_bytes=300_000)
    for turns in range(1, 6):
        body = _conversation(turns)
        cold = rewrite_request("anthropic", body, settings=RawSettings(originals_dir=tmp_path))
        warm = rewrite_request("anthropic", body, settings=tight)
        assert warm is not None and cold is not None and warm.body == cold.body
        assert tight.planner._memo.size <= 300_000


# --- the digests of recent histories ---------------------------------------------------------

_POOL = [
    Message(role="user", content="fix the tests"),
    Message(
        role="assistant",
        content="",
        tool_calls=(ToolCall("c1", "Write", {"path": "a.py", "content": "x = 1\n" * 50}),),
    ),
    Message(role="tool", content="written", tool_call_id="c1"),
    Message(role="assistant", content="done"),
    Message(role="user", content="and the docs"),
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, len(_POOL) - 1), st.booleans()), max_size=6),
        max_size=4,
    )
)
def test_digests_of_histories_in_turn_are_those_of_a_fresh_start(
    histories: list[list[tuple[int, bool]]],
) -> None:
    """Histories sharing message objects (and answers) with the one before, or not: each gets
    the digests a history nobody saw before gets."""
    previous: list[Message] = []
    for picks in histories:
        view = [*previous[: len(previous) - len(picks) // 2], *(_POOL[i] for i, _ in picks)]
        answered = [frozenset({"c1"}) if flip else frozenset() for _, flip in [(0, False), *picks]]
        answered = (answered * len(view))[: len(view)]
        got = prefix_digests(view, answered)
        _CHAINS.clear()
        assert got == prefix_digests(view, answered)
        prefix_digests(view, answered)  # kept again, for the next history
        previous = view


def test_a_kept_chain_is_charged_the_arguments_of_its_calls() -> None:
    _CHAINS.clear()
    written = {"path": "big.py", "content": "y = 2\n" * 200_000}  # 1.2 MB
    view = [_POOL[0], Message(role="assistant", tool_calls=(ToolCall("w", "Write", written),))]
    prefix_digests(view, [frozenset(), frozenset()])
    assert _CHAINS.size > 1_200_000


def test_many_histories_of_one_opening_each_find_their_own_chain_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """More histories of one opening than an opening keeps lists (a hundred agents of one system
    prompt): each re-sent history is compared with its own chain only, found by its second
    message, and hashes only its new message (filed by the first, each was compared with every
    chain of the opening, and past the bound pushed out and hashed in full)."""
    _CHAINS.clear()
    opening = _POOL[0]
    histories = [
        [opening, *(Message(role="user", content=f"agent {k}, step {n}") for n in range(3))]
        for k in range(100)
    ]
    for history in histories:
        prefix_digests(history, [frozenset()] * len(history))
    compared: list[object] = []
    printed: list[Message] = []
    shared, one = _checkpoints._shared, _checkpoints.fingerprint

    def counted_shared(chain: object, **kwargs: object) -> int:
        compared.append(chain)
        return shared(chain, **kwargs)  # type: ignore[arg-type]  # the real one, as called

    def counted(message: Message, ids: frozenset[str]) -> bytes:
        printed.append(message)
        return one(message, ids)

    monkeypatch.setattr(_checkpoints, "_shared", counted_shared)
    monkeypatch.setattr(_checkpoints, "fingerprint", counted)
    for history in histories:
        history.append(Message(role="user", content=f"next of {history[1].content}"))
        prefix_digests(history, [frozenset()] * len(history))
        assert len(compared) == 1 and printed == [history[-1]]
        compared.clear()
        printed.clear()


def test_histories_of_one_opening_in_turn_each_hash_only_their_new_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A team's agents open alike and go on at once: each history's digests resume from its own
    chain (with one chain an opening, each pushed the other's out and was hashed in full)."""
    _CHAINS.clear()
    opening = _POOL[0]
    histories = [[opening, *(Message(role="user", content=f"{who} {n}") for n in range(6))]
                 for who in "abc"]  # fmt: skip
    for history in histories:
        prefix_digests(history, [frozenset()] * len(history))
    printed: list[Message] = []
    one = _checkpoints.fingerprint

    def counted(message: Message, ids: frozenset[str]) -> bytes:
        printed.append(message)
        return one(message, ids)

    monkeypatch.setattr(_checkpoints, "fingerprint", counted)
    for history in histories:
        history.append(Message(role="user", content=f"next of {history[1].content}"))
        got = prefix_digests(history, [frozenset()] * len(history))
        assert printed.pop() is history[-1] and not printed
        _CHAINS.clear()
        assert got == prefix_digests(history, [frozenset()] * len(history))
        printed.clear()
        for other in histories:  # kept again, as the clearing forgot them
            prefix_digests(other, [frozenset()] * len(other))
        printed.clear()
