"""benchmarks.proxy_start: the originals it leaves are what a store takes for originals, and what a
sweep lists without deleting any (so it times the listing alone)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.proxy_start import LEFT_SIZE, leave_originals

from tokenlean.store import FolderOriginalStore


def test_the_originals_left_are_listed_and_kept_by_a_sweep(tmp_path: Path):
    leave_originals(tmp_path / "o", 50)
    store = FolderOriginalStore(tmp_path / "o")

    pruned = store.prune()

    assert (pruned.files, pruned.kept_files, pruned.kept_bytes) == (0, 50, 50 * LEFT_SIZE)
    handle = next((tmp_path / "o").glob("*.txt")).stem
    found = store.get("", handle)
    assert found is not None and found.text.startswith("left by an earlier run: ")
