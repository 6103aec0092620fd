"""benchmarks.langgraph_puts: both ways keep every original of every turn, each way timed on
its own turns."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from benchmarks.langgraph_puts import WAYS, async_times, sync_over_async_times, sync_times


def test_each_way_keeps_every_original_of_its_turns(tmp_path: Path):
    times = {
        "sync": sync_times(tmp_path, originals=3, turns=4),
        "async": asyncio.run(async_times(tmp_path, originals=3, turns=4)),
        "sync-over-async": sync_over_async_times(tmp_path, originals=3, turns=4),
    }
    for name, by_way in times.items():
        assert [len(by_way[way]) for way in WAYS] == [2, 2], name
        assert all(seconds > 0 for way in WAYS for seconds in by_way[way]), name
        with sqlite3.connect(tmp_path / f"{name}.db") as conn:
            rows = conn.execute("SELECT prefix, COUNT(*) FROM store GROUP BY prefix").fetchall()
        assert sorted(count for _, count in rows) == [3, 3, 3, 3], (name, rows)
