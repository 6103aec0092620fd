"""benchmarks.redis_puts: each put lands in the band the store's total was in before it, and the
store ends where the bands say: at the hard cap."""

from __future__ import annotations

from pathlib import Path

from benchmarks.redis_puts import BANDS, SIZE, history, put_times

from tests.redis_server import client, redis_server
from tokenlean._retention import hard_cap
from tokenlean.raw import RawSettings, rewrite_request


def test_the_puts_fall_in_their_bands_and_the_store_ends_at_the_hard_cap(tmp_path: Path):
    cap = 10 * SIZE
    with redis_server(tmp_path / "redis") as url:
        times = put_times(url, puts=30, cap=cap)
        total = int(client(url).get("tokenlean:originals:bytes"))

    assert [len(times[band]) for band in BANDS] == [10, 5, 15]
    assert all(seconds > 0 for band in BANDS for seconds in times[band])
    assert total == hard_cap(cap)


def test_the_history_re_sent_keeps_an_original_for_each_result(tmp_path: Path):
    with redis_server(tmp_path / "redis") as url:
        settings = RawSettings(originals_url=url, retrieval="mcp")
        done = rewrite_request("openai_chat", history(3), settings=settings)
        assert done is not None and done.results_shortened == 3
        assert len(client(url).zrange("tokenlean:originals:used", 0, -1)) == 3
