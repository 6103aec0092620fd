"""The originals folder stays bounded and private: a size cap (least recently used first), an age
limit, amortised sweeps that several processes may run at once, and a folder of one's own."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tokenlean import store as store_module
from tokenlean._retention import GRACE_MAX_SHARE, Retention
from tokenlean.proxy import ProxySettings
from tokenlean.raw import RawSettings
from tokenlean.store import FolderOriginalStore, Original, Pruned, make_handle

HOUR = 3600.0


def _original(i: int, size: int = 100) -> Original:
    text = f"{i:04d}" + "x" * (size - 5) + "\n"
    return Original(make_handle("o", text), text)


def _age(store: FolderOriginalStore, original: Original, seconds: float) -> None:
    """Make ``original`` look last used ``seconds`` ago."""
    then = time.time() - seconds
    os.utime(store.path(original.handle), (then, then))


def _kept(store: FolderOriginalStore, originals: list[Original]) -> list[int]:
    return [i for i, o in enumerate(originals) if store.path(o.handle).exists()]


def _filled(
    tmp_path: Path, n: int, *, max_bytes: int
) -> tuple[FolderOriginalStore, list[Original]]:
    """A store holding ``n`` originals of 100 bytes, original ``i`` last used ``n - i`` hours
    ago (so 0 is the least recently used); written under no cap, kept under ``max_bytes``."""
    writer = FolderOriginalStore(tmp_path / "o")
    originals = [_original(i) for i in range(n)]
    for i, original in enumerate(originals):
        writer.put("", original)
        _age(writer, original, (n - i) * HOUR)
    return FolderOriginalStore(writer.directory, max_bytes=max_bytes), originals


def test_past_the_cap_the_least_recently_used_go_first(tmp_path: Path):
    store, originals = _filled(tmp_path, 6, max_bytes=300)
    store.get("", originals[0].handle)  # read: used now
    assert store.prune(dry_run=True) == Pruned(files=3, bytes=300, kept_files=3, kept_bytes=300)

    store.put("", originals[1])  # put again (the proxy re-puts a history's originals): used now
    # ... and the store's first put sweeps
    assert store.wait_for_sweep(30)

    assert _kept(store, originals) == [0, 1, 5]
    assert store.prune() == Pruned(files=0, bytes=0, kept_files=3, kept_bytes=300)


def test_originals_unused_past_the_age_limit_are_deleted(tmp_path: Path):
    store = FolderOriginalStore(tmp_path / "o", max_age=2 * HOUR)
    old, recent = _original(1), _original(2)
    store.put("", old)
    store.put("", recent)
    assert store.wait_for_sweep(30)  # the first put's, of a folder that was empty
    _age(store, old, 3 * HOUR)
    _age(store, recent, 1 * HOUR)

    assert store.prune().files == 1
    assert _kept(store, [old, recent]) == [1]


def test_what_was_used_in_the_last_minutes_stays_even_over_the_cap(tmp_path: Path):
    store = FolderOriginalStore(tmp_path / "o", max_bytes=300)  # 400 bytes: within the grace
    originals = [_original(i) for i in range(4)]
    for original in originals:
        store.put("", original)  # all used just now: a live conversation may point at them

    assert store.prune().files == 0
    assert _kept(store, originals) == [0, 1, 2, 3]


def test_a_flood_of_new_originals_is_capped_even_inside_the_grace(tmp_path: Path):
    """With a 10 MiB cap, 200 distinct 1 MB bodies in a minute left 200 MB on disk: the grace
    kept everything. It protects what live conversations point at, not a flood."""
    cap = 10 * 2**20
    store = FolderOriginalStore(tmp_path / "o", max_bytes=cap)
    originals = [_original(i, size=2**20) for i in range(40)]
    for original in originals:
        store.put("", original)  # each one used just now, as the proxy writes them
    assert store.wait_for_sweep(30)

    on_disk = sum(p.stat().st_size for p in store.directory.glob("*.txt"))
    assert on_disk <= cap * (1 + GRACE_MAX_SHARE) + cap // 16  # before: all 40 MiB
    kept = _kept(store, originals)
    assert kept == list(range(40 - len(kept), 40))  # the newest stay: they are what markers name


def test_a_dry_run_counts_and_deletes_nothing(tmp_path: Path):
    store, originals = _filled(tmp_path, 4, max_bytes=200)

    assert store.prune(dry_run=True).files == 2
    assert _kept(store, originals) == [0, 1, 2, 3]


def test_the_first_put_sweeps_a_folder_left_by_earlier_runs(tmp_path: Path):
    first, originals = _filled(tmp_path, 4, max_bytes=10**6)
    for original in originals:
        _age(first, original, 30 * 24 * HOUR)  # a month unused
    stray = first.directory / ".tmp-dead-writer.txt"
    stray.write_text("half")
    os.utime(stray, (time.time() - HOUR, time.time() - HOUR))

    later = FolderOriginalStore(first.directory)  # a new process, the default limits
    later.put("", _original(9))
    assert later.wait_for_sweep(30)

    assert _kept(later, originals) == []
    assert not stray.exists()


def test_sweeps_are_amortised_over_the_bytes_written(tmp_path: Path):
    store = FolderOriginalStore(tmp_path / "o", max_bytes=1600)  # a sweep every 100 bytes
    first = _original(0)
    store.put("", first)  # the first sweep, at start
    assert store.wait_for_sweep(30)
    _age(store, first, 40 * 24 * HOUR)
    store.put("", first)  # an existing original: nothing written, no sweep (but used now)
    _age(store, first, 40 * 24 * HOUR)
    assert store.wait_for_sweep(30)
    assert _kept(store, [first]) == [0]

    store.put("", _original(1))  # 100 bytes written: a sweep, past the age limit
    assert store.wait_for_sweep(30)

    assert _kept(store, [first]) == []


def _held_sweeps(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[str], threading.Event]:
    """Make every sweep note its thread's name, then wait until the event is set."""
    threads: list[str] = []
    release = threading.Event()
    sweep = Retention.sweep

    def held(self: Retention, *, dry_run: bool = False) -> Pruned:
        threads.append(threading.current_thread().name)
        assert release.wait(30)
        return sweep(self, dry_run=dry_run)

    monkeypatch.setattr(Retention, "sweep", held)
    return threads, release


def test_a_put_does_not_wait_for_the_sweep_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A sweep lists the whole folder (60 ms for the 9,000 files of half a GiB), and the proxy
    puts on its way upstream: the put that makes a sweep due only starts it."""
    old = _original(0)
    writer = FolderOriginalStore(tmp_path / "o")
    writer.put("", old)
    assert writer.wait_for_sweep(30)
    _age(writer, old, 30 * 24 * HOUR)  # a month unused: the next sweep deletes it
    threads, release = _held_sweeps(monkeypatch)
    store = FolderOriginalStore(writer.directory, max_bytes=1600)  # a sweep every 100 bytes

    store.put("", _original(1))  # the first put of a process sweeps: it returns all the same
    assert not store.wait_for_sweep(0.05)
    assert _kept(store, [old]) == [0]
    for i in range(2, 5):  # 300 bytes more: due again, while the sweep runs
        store.put("", _original(i))
    release.set()

    assert store.wait_for_sweep(30)
    assert _kept(store, [old]) == []
    # one sweep, then one more for what was written during it; neither on the putting thread
    assert threads == ["tokenlean-originals-sweep"] * 2


def test_a_process_that_exits_finishes_its_sweep_first(tmp_path: Path):
    """The sweeping thread is not a daemon: a folder only short-lived processes write to (one
    per command) is swept all the same."""
    old = _original(0)
    writer = FolderOriginalStore(tmp_path / "o")
    writer.put("", old)
    assert writer.wait_for_sweep(30)
    _age(writer, old, 30 * 24 * HOUR)
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from tokenlean import _retention\n"
        "from tokenlean.store import FolderOriginalStore, Original, make_handle\n"
        "sweep = _retention.Retention.sweep\n"
        "def slow(self, **kw):\n"
        "    time.sleep(0.5)\n"  # the process reaches its end before the sweep does
        "    return sweep(self, **kw)\n"
        "_retention.Retention.sweep = slow\n"
        "text = 'new\\n'\n"
        "FolderOriginalStore(Path(sys.argv[1])).put('', Original(make_handle('o', text), text))\n"
    )
    subprocess.run([sys.executable, "-c", script, str(writer.directory)], check=True, timeout=60)

    assert _kept(writer, [old]) == []


def test_a_put_or_a_read_of_a_kept_original_marks_it_used(tmp_path: Path):
    store = FolderOriginalStore(tmp_path / "o")
    put, read = _original(1), _original(2)
    for original in (put, read):
        store.put("", original)
        _age(store, original, 5 * HOUR)

    store.put("", put)
    assert store.get("", read.handle) == Original(read.handle, read.text)

    for original in (put, read):
        assert time.time() - store.path(original.handle).stat().st_mtime < 60


def test_a_pruned_original_reads_as_evicted_until_written_again(tmp_path: Path):
    store, originals = _filled(tmp_path, 3, max_bytes=100)
    store.prune()
    gone = originals[0]

    assert store.get("", gone.handle) is None
    assert store.evicted("", gone.handle)
    assert not store.evicted("", make_handle("o", "never kept"))
    store.put("", gone)
    assert not store.evicted("", gone.handle)


def test_a_folder_that_was_0755_becomes_0700_and_its_0644_files_0600(tmp_path: Path):
    folder = tmp_path / "o"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    kept = _original(1)
    (folder / f"{kept.handle}.txt").write_text(kept.text)
    (folder / f"{kept.handle}.txt").chmod(0o644)

    store = FolderOriginalStore(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    store.put("", _original(2))  # the first put sweeps (and fixes) the files there
    assert store.wait_for_sweep(30)

    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}
    assert set(modes.values()) == {0o600}, modes


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_a_folder_another_user_owns_is_refused(tmp_path: Path):
    folder = tmp_path / "o"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)

    with pytest.raises(ValueError, match="belongs to another user"):
        FolderOriginalStore(folder)
    with pytest.raises(ValueError, match="belongs to another user"):
        RawSettings(originals_dir=folder)


def test_processes_sweeping_one_folder_at_once_never_fail(tmp_path: Path):
    folder = tmp_path / "o"
    stores = [FolderOriginalStore(folder, max_bytes=2_000) for _ in range(4)]
    originals = [_original(i) for i in range(200)]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i, original in enumerate(originals):
                stores[k].put("", original)
                if i % 7 == k:
                    # so the cap has victims to fight over (past the grace's share of the cap,
                    # another sweep may have taken the file already)
                    with contextlib.suppress(FileNotFoundError):
                        _age(stores[k], original, HOUR)
                    stores[k].prune()
                stores[k].get("", original.handle)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"max_bytes": 0}, "max_bytes must be an int >= 1"),
        ({"max_bytes": 1.5}, "max_bytes must be an int"),
        ({"max_age": 60}, "max_age must be a finite number >= 600"),
        ({"max_age": float("nan")}, "max_age must be a finite number"),
    ],
)
def test_bad_limits_raise(tmp_path: Path, limits: dict[str, float], message: str):
    with pytest.raises(ValueError, match=message):
        FolderOriginalStore(tmp_path, **limits)  # type: ignore[arg-type]
    prefixed = {f"originals_{k}": v for k, v in limits.items()}
    with pytest.raises(ValueError, match=f"originals_{message}"):
        RawSettings(originals_dir=tmp_path, **prefixed)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"originals_{message}"):
        ProxySettings(originals_dir=tmp_path, **prefixed)  # type: ignore[arg-type]


def test_the_limits_default_in_one_place(tmp_path: Path):
    store = FolderOriginalStore(tmp_path)
    settings = RawSettings(originals_dir=tmp_path)
    assert (store.max_bytes, store.max_age) == (2**30, 7 * 24 * HOUR)
    assert (store.max_bytes, store.max_age) == (
        store_module.ORIGINALS_MAX_BYTES,
        store_module.ORIGINALS_MAX_AGE,
    )
    assert (settings.store.max_bytes, settings.store.max_age) == (store.max_bytes, store.max_age)
    proxy = ProxySettings()
    assert (proxy.originals_max_bytes, proxy.originals_max_age) == (store.max_bytes, store.max_age)


def test_settings_keep_one_store_whose_count_of_bytes_written_lasts(tmp_path: Path):
    settings = RawSettings(originals_dir=tmp_path, originals_max_bytes=5_000)

    assert settings.store is settings.store
    assert settings.store.max_bytes == 5_000
