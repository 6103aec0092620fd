"""Originals kept for retrieval: scoped per thread, in memory or in a LangGraph store."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from tokenlean.langchain.store import LangGraphOriginalStore, StoreChoice
from tokenlean.store import (
    MEMORY_MAX_BYTES,
    MEMORY_MAX_BYTES_PER_THREAD,
    STORE_NAMESPACE,
    FolderOriginalStore,
    InMemoryOriginalStore,
    Original,
    OriginalStore,
    excerpt,
    make_handle,
    parse_lines,
)

TEXT = "\n".join(f"line {i} of the log" for i in range(1, 101))


def _stores() -> list[OriginalStore]:
    return [InMemoryOriginalStore(), LangGraphOriginalStore(InMemoryStore())]


def test_a_folder_store_keeps_files_named_by_handle(tmp_path: Any) -> None:
    store = FolderOriginalStore(tmp_path / "originals")
    original = Original(make_handle("o", TEXT), TEXT)
    store.put("any thread", original)
    store.put("another thread", original)  # written once; the name is the content's
    assert [p.name for p in (tmp_path / "originals").iterdir()] == [f"{original.handle}.txt"]
    assert store.get("", original.handle) == Original(original.handle, TEXT)
    assert store.get("", make_handle("o", "never kept")) is None
    assert store.get("", "../../etc/passwd") is None  # only handles name files


def test_a_folder_store_never_reads_through_a_symlink(tmp_path: Any) -> None:
    """A link planted in the folder under an original's name used to be followed, so
    ``read_original`` (the MCP tool reads through ``get``) served any file the user can read."""
    secret = tmp_path / "secret.txt"
    secret.write_text("the key is 42\n")
    folder = tmp_path / "originals"
    store = FolderOriginalStore(folder)
    handle = make_handle("o", "planted")
    folder.mkdir(mode=0o700)
    store.path(handle).symlink_to(secret)
    assert store.get("", handle) is None
    assert not store.evicted("", handle)  # read_original (the MCP tool) says "no original"
    fifo = make_handle("o", "a fifo")
    os.mkfifo(store.path(fifo))
    assert store.get("", fifo) is None  # answered at once: no wait for a writer
    before = secret.stat().st_mtime
    store.put("", Original(handle, TEXT))  # written over the link, not through it
    assert not store.path(handle).is_symlink() and store.get("", handle) == Original(handle, TEXT)
    assert secret.read_text() == "the key is 42\n" and secret.stat().st_mtime == before


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
    store.put("a\0b", Original("h", "a NUL"))  # LangGraph refuses NUL in a label
    store.put("a%00b", Original("h", "escaped NUL"))
    assert store.get("a\0b", "h") == Original("h", "a NUL")
    assert store.get("a%00b", "h") == Original("h", "escaped NUL")
    for namespace in [(), ("",), ("a.b",), ("a\0",), ("langgraph", "originals")]:
        with pytest.raises(ValueError, match="namespace"):  # refused here, not at a put
            LangGraphOriginalStore(backing, namespace=namespace)


def test_langgraph_originals_go_in_one_batch_with_what_put_would_send(tmp_path: Any) -> None:
    """``put_many`` sends one ``batch`` of the ops ``put`` sends one by one: the store's
    default TTL included (``put`` gives it to an item that names none)."""
    import sqlite3

    from langgraph.store.sqlite import SqliteStore

    class Counted(SqliteStore):
        batches: list[int]

        def batch(self, ops: Any) -> Any:
            ops = list(ops)
            self.batches.append(len(ops))
            return super().batch(ops)

    for ttl in (None, {"default_ttl": 30.0}):
        path = tmp_path / f"{ttl is None}.db"
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        backing = Counted(conn, ttl=ttl)  # type: ignore[arg-type]
        backing.setup()
        backing.batches = []
        store = LangGraphOriginalStore(backing)
        store.put("t", Original("o0", TEXT))
        store.put_many("t", [Original(f"o{i}", f"{TEXT} {i}", "bash", f"c{i}") for i in (1, 2, 3)])
        store.put_many("t", [])
        assert backing.batches == [1, 3]
        rows = conn.execute("SELECT key, expires_at IS NULL FROM store ORDER BY key").fetchall()
        assert rows == [(f"o{i}", ttl is None) for i in range(4)]
        assert store.get("t", "o2") == Original("o2", f"{TEXT} 2", "bash", "c2")


def test_a_sync_agent_over_an_async_langgraph_store_puts_a_turn_in_one_batch(
    tmp_path: Any,
) -> None:
    """A sync caller of an ``AsyncSqliteStore`` (its loop on another thread): the store's own
    ``put`` only carries one op to that loop, so a turn's originals go as one ``abatch``, not
    one round trip each."""
    from benchmarks.langgraph_puts import served_on_a_thread
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    class Counted(AsyncSqliteStore):
        batches: list[int]

        async def abatch(self, ops: Any) -> Any:
            ops = list(ops)
            self.batches.append(len(ops))
            return await super().abatch(ops)

    with served_on_a_thread(Counted.from_conn_string(str(tmp_path / "async.db"))) as backing:
        backing.batches = []
        store = LangGraphOriginalStore(backing)
        store.put_many("t", [Original(f"o{i}", f"{TEXT} {i}") for i in (1, 2, 3)])
        assert backing.batches == [3]
        assert store.get("t", "o2") == Original("o2", f"{TEXT} 2")


async def test_a_langgraph_store_that_has_its_own_put_gets_each_original_through_it() -> None:
    class Audited(InMemoryStore):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []

        def put(self, namespace: Any, key: str, value: Any, *args: Any, **kwargs: Any) -> None:
            self.seen.append(key)
            super().put(namespace, key, value, *args, **kwargs)

        async def aput(
            self, namespace: Any, key: str, value: Any, *args: Any, **kwargs: Any
        ) -> None:
            self.seen.append(f"a{key}")
            await super().aput(namespace, key, value, *args, **kwargs)

    backing = Audited()
    store = LangGraphOriginalStore(backing)
    store.put_many("t", [Original("o1", TEXT), Original("o2", TEXT)])
    await store.aput_many("t", [Original("o3", TEXT)])
    assert backing.seen == ["o1", "o2", "ao3"]
    assert store.get("t", "o3") == Original("o3", TEXT)


def test_memory_store_is_thread_safe_and_bounded_per_thread() -> None:
    store = InMemoryOriginalStore(max_bytes_per_thread=1000, max_bytes=10_000)

    def fill(scope: str) -> None:
        for i in range(200):
            store.put(scope, Original(f"o{i}", "x" * 100))

    workers = [threading.Thread(target=fill, args=(f"t{n}",)) for n in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(store) == 40 and store.size_bytes == 4000
    for n in range(4):  # each thread keeps its newest ten, whatever the others did
        assert store.thread_bytes(f"t{n}") == 1000
        assert [i for i in range(200) if store.get(f"t{n}", f"o{i}")] == list(range(190, 200))


def test_memory_store_counts_utf8_bytes_not_characters() -> None:
    store = InMemoryOriginalStore(max_bytes_per_thread=1000, max_bytes=1000)
    store.put("t", Original("o1", "é" * 400))  # 400 characters, 800 bytes
    store.put("t", Original("o2", "a" * 300))
    assert store.get("t", "o1") is None and store.evicted("t", "o1")
    assert store.size_bytes == 300
    store.put("t", Original("o3", "\U0001f600" * 100))  # four bytes each
    assert store.size_bytes == 700


def test_a_busy_thread_cannot_push_out_another_threads_originals() -> None:
    store = InMemoryOriginalStore(max_bytes_per_thread=1_000, max_bytes=5_000)
    store.put("quiet", Original("o1", "q" * 500))
    for i in range(1_000):
        store.put("busy", Original(f"o{i}", "b" * 100))
    assert store.get("quiet", "o1") == Original("o1", "q" * 500)
    assert store.thread_bytes("busy") == 1_000


def test_past_the_total_the_least_recently_used_thread_gives_way() -> None:
    store = InMemoryOriginalStore(max_bytes_per_thread=1_000, max_bytes=2_000)
    store.put("old", Original("o1", "a" * 1_000))
    store.put("used", Original("o1", "b" * 1_000))
    assert store.get("old", "o1") is not None  # reading makes "old" the most recently used
    store.put("new", Original("o1", "c" * 1_000))
    assert store.get("used", "o1") is None and store.evicted("used", "o1")
    assert store.get("old", "o1") is not None and store.get("new", "o1") is not None
    assert store.size_bytes == 2_000


def test_an_original_larger_than_a_threads_share_is_not_kept_and_says_so() -> None:
    store = InMemoryOriginalStore(max_bytes_per_thread=100, max_bytes=1_000)
    store.put("t", Original("small", "s" * 50))
    store.put("t", Original("huge", "h" * 101))
    assert store.get("t", "huge") is None and store.evicted("t", "huge")
    assert store.get("t", "small") is not None  # nothing else was pushed out for it
    assert not store.evicted("t", "never-kept") and not store.evicted("other", "small")
    store.put("t", Original("huge", "h" * 10))  # kept again: no longer reported evicted
    assert not store.evicted("t", "huge")


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_bytes": 0}, ValueError, "max_bytes must be an int >= 1"),
        ({"max_bytes_per_thread": -1}, ValueError, "max_bytes_per_thread"),
        ({"max_bytes": "1e6"}, TypeError, "max_bytes must be an int >= 1"),
        ({"max_bytes_per_thread": True}, TypeError, "max_bytes_per_thread"),
        ({"max_bytes_per_thread": 10, "max_bytes": 5}, ValueError, "must not exceed max_bytes"),
    ],
)
def test_memory_store_refuses_bad_bounds(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        InMemoryOriginalStore(**options)


def test_defaults_live_in_one_place() -> None:
    store = InMemoryOriginalStore()
    assert store.max_bytes == MEMORY_MAX_BYTES
    assert store.max_bytes_per_thread == MEMORY_MAX_BYTES_PER_THREAD <= MEMORY_MAX_BYTES


def test_store_choice_prefers_the_given_store_then_the_agents_then_memory() -> None:
    agent_store = InMemoryStore()
    given = InMemoryOriginalStore()
    assert StoreChoice(given).pick(agent_store) is given
    choice = StoreChoice()
    assert choice.pick(None) is choice.memory is choice.default
    wrapped = choice.pick(agent_store)
    assert isinstance(wrapped, LangGraphOriginalStore) and wrapped.store is agent_store
    assert wrapped.namespace == STORE_NAMESPACE
    assert choice.pick(agent_store) is wrapped  # one wrapper per agent store
    assert StoreChoice.of(choice) is choice
    # A LangGraph store given directly is wrapped, not mistaken for an original store.
    direct = StoreChoice(agent_store).given
    assert isinstance(direct, LangGraphOriginalStore) and direct.store is agent_store


@pytest.mark.parametrize("bad", [object(), "memory", {"put": 1}, 42])
def test_a_store_that_does_not_fit_the_protocol_is_refused(bad: object) -> None:
    with pytest.raises(TypeError, match="store must be an OriginalStore"):
        StoreChoice(bad)
    with pytest.raises(TypeError, match="store must be a LangGraph BaseStore"):
        LangGraphOriginalStore(bad)  # type: ignore[arg-type]


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
