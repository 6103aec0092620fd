"""A fresh proxy's first conversation: what the requests of a new ``tokenlean proxy`` pay for
what it does once (loading what it prices with, the first sweep of its originals folder).

Usage (from the repository root)::

    python -m benchmarks.proxy_start [--starts 3] [--turns 10] [--files 0 9000]

For each ``--files`` count and each of ``--starts`` starts, a new proxy (and fake upstream, each
in its own process on 127.0.0.1, as :mod:`benchmarks.proxy_latency` starts them) gets an
originals folder of its own holding that many originals left by an earlier run (1 KB each, used
an hour ago: a sweep deletes none of them, but lists them all), then two conversations of
``--turns`` requests each, one after the other (Claude Code trajectories, as
:mod:`benchmarks.proxy_load` builds them). Prints, per start, each conversation's first and
slowest request and its median, in milliseconds of wall time. Last, for each ``--files``
count, what one sweep of such a folder costs this process in CPU time (the median of five: it
deletes none of them, so each lists and looks at them all), the interpreter time that the
requests of a proxy share with its sweeping thread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from benchmarks.proxy_latency import HEADERS, servers
from benchmarks.proxy_load import conversations
from tokenlean.store import FolderOriginalStore, make_handle

LEFT_SIZE = 1024  # a sweep's cost is per file listed, not per byte


def leave_originals(folder: Path, count: int) -> None:
    """``count`` originals of :data:`LEFT_SIZE` bytes in ``folder``, each last used an hour ago."""
    folder.mkdir(mode=0o700, exist_ok=True)
    then = time.time() - 3600
    for i in range(count):
        text = f"left by an earlier run: {i}\n".ljust(LEFT_SIZE - 1, ".") + "\n"
        path = folder / f"{make_handle('o', text)}.txt"
        path.write_text(text)
        path.chmod(0o600)
        os.utime(path, (then, then))


def first_conversations(files: int, turns: int) -> list[list[float]]:
    """The milliseconds of each request of a new proxy's first two conversations."""
    bodies = conversations(turns)[:2]
    with tempfile.TemporaryDirectory(prefix="tokenlean-start-") as root:
        folder = Path(root) / "originals"
        leave_originals(folder, files)
        out = []
        proxy = servers(False, ["--originals", str(folder)])
        with proxy as (_, url, _pid), httpx.Client(timeout=120) as client:
            for conversation in bodies:
                times = []
                for body in conversation:
                    start = time.perf_counter()
                    answer = client.post(f"{url}/v1/messages", content=body, headers=HEADERS)
                    times.append(1000 * (time.perf_counter() - start))
                    answer.raise_for_status()
                out.append(times)
        return out


def sweep_cpu_ms(files: int, repeat: int = 5) -> float:
    """The median CPU milliseconds of a sweep of a folder of ``files`` left originals."""
    with tempfile.TemporaryDirectory(prefix="tokenlean-sweep-") as root:
        folder = Path(root) / "originals"
        leave_originals(folder, files)
        store = FolderOriginalStore(folder)
        times = []
        for _ in range(repeat):
            start = time.process_time()
            store.prune()
            times.append(1000 * (time.process_time() - start))
        return statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--files", type=int, nargs="+", default=[0, 9000])
    args = parser.parse_args(argv)
    print("| originals left | start | conversation | first ms | slowest ms | median ms |")
    print("|---:|---:|---:|---:|---:|---:|")
    for files in args.files:
        for start in range(1, args.starts + 1):
            for n, times in enumerate(first_conversations(files, args.turns), 1):
                cells = (times[0], max(times), statistics.median(times))
                shown = " | ".join(f"{value:.1f}" for value in cells)
                print(f"| {files:,} | {start} | {n} | {shown} |", flush=True)
    print()
    for files in args.files:
        print(f"a sweep of {files:,} originals: {sweep_cpu_ms(files):.1f} ms of CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
