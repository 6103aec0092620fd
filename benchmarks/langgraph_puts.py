"""What a turn's originals cost the agent's own LangGraph store: a put each, or one batch.

Usage (from the repository root)::

    python -m benchmarks.langgraph_puts [--originals 5] [--turns 200] [--rounds 3]

The LangChain middleware keep a turn's originals in the agent's store
(``create_agent(..., store=...)``) when no other store is given. Each round makes a
``SqliteStore`` and an ``AsyncSqliteStore``, each in a file of its own in a temporary folder,
and keeps ``--turns`` turns of ``--originals`` distinct originals of about 2,000 characters in
each, every turn under a thread of its own: one ``put`` (``aput``) of each original, as the
middleware did before, and one ``put_many`` (``aput_many``), as they do now, the two ways
alternating turn by turn in the same store. A third store is an ``AsyncSqliteStore`` put to
by a sync caller (a sync agent over an async store, the store's loop on a thread of its own):
a ``put`` of each carries one op to that loop, ``put_many`` one batch. Prints, per round, the
median milliseconds of wall time a turn takes each way.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path
from typing import TypeVar

from langgraph.store.sqlite import SqliteStore
from langgraph.store.sqlite.aio import AsyncSqliteStore

from tokenlean.langchain.store import LangGraphOriginalStore
from tokenlean.store import Original

WAYS = ("a put each", "one batch")
S = TypeVar("S", bound=AsyncSqliteStore)


def _turn(turn: int, originals: int) -> list[Original]:
    return [
        Original(f"o{turn:06d}{i:06d}", f"turn {turn}, result {i}: " + "log line\n" * 220)
        for i in range(originals)
    ]


def sync_times(folder: Path, *, originals: int, turns: int) -> dict[str, list[float]]:
    """Seconds each turn took into a ``SqliteStore``, by way."""
    conn = sqlite3.connect(folder / "sync.db", check_same_thread=False, isolation_level=None)
    backing = SqliteStore(conn)
    backing.setup()
    try:
        return sync_turns(LangGraphOriginalStore(backing), originals=originals, turns=turns)
    finally:
        conn.close()


def sync_turns(
    store: LangGraphOriginalStore, *, originals: int, turns: int
) -> dict[str, list[float]]:
    """Seconds each turn took into ``store`` from a sync caller, by way."""

    def each(scope: str, kept: list[Original]) -> None:
        for original in kept:
            store.put(scope, original)

    ways: dict[str, Callable[[str, list[Original]], None]] = {
        WAYS[0]: each,
        WAYS[1]: store.put_many,
    }
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    for turn in range(turns):
        way = WAYS[turn % 2]
        start = time.perf_counter()
        ways[way](f"thread-{turn}", _turn(turn, originals))
        times[way].append(time.perf_counter() - start)
    return times


async def async_times(folder: Path, *, originals: int, turns: int) -> dict[str, list[float]]:
    """Seconds each turn took into an ``AsyncSqliteStore``, by way."""
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    async with AsyncSqliteStore.from_conn_string(str(folder / "async.db")) as backing:
        await backing.setup()
        store = LangGraphOriginalStore(backing)

        async def each(scope: str, kept: list[Original]) -> None:
            for original in kept:
                await store.aput(scope, original)

        ways: dict[str, Callable[[str, list[Original]], Awaitable[None]]] = {
            WAYS[0]: each,
            WAYS[1]: store.aput_many,
        }
        for turn in range(turns):
            way = WAYS[turn % 2]
            start = time.perf_counter()
            await ways[way](f"thread-{turn}", _turn(turn, originals))
            times[way].append(time.perf_counter() - start)
    return times


def sync_over_async_times(folder: Path, *, originals: int, turns: int) -> dict[str, list[float]]:
    """Seconds each turn took into an ``AsyncSqliteStore`` from a sync caller (a sync agent
    over an async store: the store's loop runs on a thread of its own), by way."""
    path = str(folder / "sync-over-async.db")
    with served_on_a_thread(AsyncSqliteStore.from_conn_string(path)) as backing:
        return sync_turns(LangGraphOriginalStore(backing), originals=originals, turns=turns)


@contextmanager
def served_on_a_thread(context: AbstractAsyncContextManager[S]) -> Iterator[S]:
    """The async store ``context`` opens, set up, its event loop running on a thread of its
    own so that a sync caller can use it; closed, its tasks ended and the loop stopped after."""
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()

    async def opened() -> S:
        backing = await context.__aenter__()
        await backing.setup()
        return backing

    async def closed() -> None:
        await context.__aexit__(None, None, None)
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:  # the store's batching task
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    try:
        yield asyncio.run_coroutine_threadsafe(opened(), loop).result()
    finally:
        asyncio.run_coroutine_threadsafe(closed(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        runner.join()
        loop.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--originals", type=int, default=5)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.originals} originals a turn, {args.turns} turns a round; median ms a turn")
    print("| round | store | a put each | one batch |")
    print("|---:|---|---:|---:|")
    for n in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            rows = {
                "SqliteStore": sync_times(folder, originals=args.originals, turns=args.turns),
                "AsyncSqliteStore": asyncio.run(
                    async_times(folder, originals=args.originals, turns=args.turns)
                ),
                "AsyncSqliteStore, sync caller": sync_over_async_times(
                    folder, originals=args.originals, turns=args.turns
                ),
            }
        for label, times in rows.items():
            each, batch = (1000 * statistics.median(times[way]) for way in WAYS)
            print(f"| {n} | {label} | {each:.2f} | {batch:.2f} |")


if __name__ == "__main__":
    main()
