"""Originals kept for retrieval: scoped per thread, in memory or in a LangGraph store."""

from __future__ import annotations

import threading

import pytest
from langgraph.store.memory import InMemoryStore

from tokenlean.store import (
    InMemoryOriginalStore,
    LangGraphOriginalStore,
    Original,
    OriginalStore,
    excerpt,
    parse_lines,
)

TEXT = "\n".join(f"line {i} of the log" for i in range(1, 101))


def _stores() -> list[OriginalStore]:
    return [InMemoryOriginalStore(), LangGraphOriginalStore(InMemoryStore())]


@pytest.mark.parametrize("store", _stores(), ids=["memory", "langgraph"])
def test_a_thread_reads_only_its_own_originals(store: OriginalStore) -> None:
    store.put("thread-a", Original("o1", TEXT, "bash", "call_1"))
    assert store.get("thread-a", "o1") == Original("o1", TEXT, "bash", "call_1")
    assert store.get("thread-b", "o1") is None
    assert store.get("thread-a", "o2") is None


@pytest.mark.parametrize("store", _stores(), ids=["memory", "langgraph"])
async def test_async_access_matches_sync(store: OriginalStore) -> None:
    await store.aput("t", Original("o1", TEXT))
    assert (await store.aget("t", "o1")) == store.get("t", "o1") == Original("o1", TEXT)
    assert await store.aget("other", "o1") is None


def test_langgraph_scopes_are_escaped_injectively() -> None:
    backing = InMemoryStore()
    store = LangGraphOriginalStore(backing, namespace=("app", "originals"))
    store.put("a.b", Original("h", "dotted"))
    store.put("a%2Eb", Original("h", "escaped"))
    store.put("", Original("h", "empty"))
    assert store.get("a.b", "h") == Original("h", "dotted")
    assert store.get("a%2Eb", "h") == Original("h", "escaped")
    assert store.get("", "h") == Original("h", "empty")
    assert backing.get(("app", "originals", "a%2Eb"), "h") is not None
    with pytest.raises(ValueError, match="namespace"):
        LangGraphOriginalStore(backing, namespace=())


def test_memory_store_drops_the_oldest_beyond_its_size_and_is_thread_safe() -> None:
    store = InMemoryOriginalStore(max_chars=1000)

    def fill(scope: str) -> None:
        for i in range(200):
            store.put(scope, Original(f"o{i}", "x" * 100))

    workers = [threading.Thread(target=fill, args=(f"t{n}",)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(store) == 10
    assert sum(1 for n in range(4) if store.get(f"t{n}", "o199")) >= 1
    with pytest.raises(ValueError, match="max_chars"):
        InMemoryOriginalStore(max_chars=0)


def test_excerpt_by_range_pattern_and_whole() -> None:
    assert excerpt(TEXT, lines="3-4") == "3: line 3 of the log\n4: line 4 of the log"
    assert excerpt(TEXT, lines="99-") == "99: line 99 of the log\n100: line 100 of the log"
    assert excerpt(TEXT, lines="7") == "7: line 7 of the log"
    assert excerpt(TEXT, pattern="LINE 5 ") == "5: line 5 of the log"
    assert excerpt(TEXT, pattern="line 5 ", context=1).split("\n") == [
        "4: line 4 of the log",
        "5: line 5 of the log",
        "6: line 6 of the log",
    ]
    assert excerpt(TEXT, lines="1-20", pattern="line 1").split("\n")[0] == "1: line 1 of the log"
    assert excerpt(TEXT, pattern="absent") == "[no line contains 'absent']"
    assert excerpt(TEXT, lines="500-600").startswith("[no such lines")
    assert len(excerpt(TEXT).split("\n")) == 100


def test_excerpt_is_cut_when_too_long() -> None:
    out = excerpt("y" * 50 + "\n" + "z" * 100_000, max_chars=1000)
    assert out.startswith("1: " + "y" * 50) and "ask for a narrower range" in out
    assert len(out) < 1200


@pytest.mark.parametrize("spec", ["abc", "5-3", "0-2", "1-2-3"])
def test_bad_line_ranges_raise(spec: str) -> None:
    with pytest.raises(ValueError, match="lines"):
        parse_lines(spec, 10)
