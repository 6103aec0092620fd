"""Tally: the one shape behind every middleware's stats."""

from __future__ import annotations

import copy
import pickle
import threading

import pytest

from tokenlean import TokenSavingStats
from tokenlean.stats import Tally


def test_stats_add_is_atomic_across_threads() -> None:
    tally = Tally(TokenSavingStats)

    def work() -> None:
        for _ in range(2000):
            tally.add(compressions=1, chars_saved=3)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stats = tally.snapshot()
    assert (stats.compressions, stats.chars_saved) == (16000, 48000)


def test_stats_reject_unknown_counters_and_survive_copying() -> None:
    tally = Tally(TokenSavingStats)
    tally.add(compressions=2, chars_saved=10)
    with pytest.raises(AttributeError):
        tally.add(nonsense=1)
    for clone in (copy.deepcopy(tally), pickle.loads(pickle.dumps(tally))):
        assert clone.snapshot() == tally.snapshot()
        clone.add(compressions=1)
        assert clone.snapshot().compressions == 3 and tally.snapshot().compressions == 2


def test_snapshots_are_frozen_and_take_the_other_fields() -> None:
    stats = Tally(TokenSavingStats).snapshot()
    with pytest.raises(AttributeError):
        stats.compressions = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        Tally(int)
