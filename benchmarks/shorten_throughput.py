"""Throughput of ``tokenlean.shorten`` on real tool outputs and on large synthetic inputs.

Run from the repository root::

    python benchmarks/shorten_throughput.py [--repeat 7] [--shared ../shared]

For every file in ``shared/data/tool_outputs`` it times ``shorten(text)`` at the defaults
(the median of ``--repeat`` runs) and reports the median time per file and the throughput
over all files (total bytes / total of the per-file medians). It then times a 1 MB log built
from the real SWE-bench test logs, a 10 MB single line and a million short lines.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from tokenlean import shorten

ROOT = Path(__file__).resolve().parents[1]


def median_seconds(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def real_files(shared: Path) -> list[Path]:
    folder = shared / "data" / "tool_outputs"
    return sorted(p for p in folder.glob("*/*") if p.is_file() and p.name != "index.json")


def one_mb_log(files: list[Path]) -> str:
    logs = [p.read_text(encoding="utf-8", errors="replace") for p in files if "test_logs" in str(p)]
    text = "\n".join(logs)
    while len(text.encode()) < 1_000_000:
        text += "\n" + text
    return text.encode()[:1_000_000].decode("utf-8", errors="ignore")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    args = parser.parse_args()
    files = real_files(args.shared)
    rows = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        seconds = median_seconds(lambda text=text: shorten(text), args.repeat)
        report = shorten(text)
        rows.append((path, len(text.encode()), seconds, report))
    total_bytes = sum(r[1] for r in rows)
    total_seconds = sum(r[2] for r in rows)
    print("| file | kind | KB | tokens before -> after | ms (median) |")
    print("|---|---|---:|---:|---:|")
    for path, size, seconds, report in rows:
        print(
            f"| {path.parent.name}/{path.name} | {report.kind} | {size / 1024:.1f} "
            f"| {report.tokens_before} -> {report.tokens_after} | {1000 * seconds:.2f} |"
        )
    print()
    print(f"files: {len(rows)}, {total_bytes / 1e6:.3f} MB")
    print(f"median time per file: {1000 * statistics.median(r[2] for r in rows):.2f} ms")
    print(f"throughput over all files: {total_bytes / 1e6 / total_seconds:.1f} MB/s")
    big = one_mb_log(files)
    seconds = median_seconds(lambda: shorten(big), args.repeat)
    print(f"1 MB log (real test logs concatenated): {1000 * seconds:.1f} ms")
    line = "abc " * 2_500_000
    print(f"10 MB single line: {1000 * median_seconds(lambda: shorten(line), 3):.1f} ms")
    many = "\n".join(f"ok {i}" for i in range(1_000_000))
    print(f"1,000,000 short lines: {1000 * median_seconds(lambda: shorten(many), 3):.0f} ms")


if __name__ == "__main__":
    main()
