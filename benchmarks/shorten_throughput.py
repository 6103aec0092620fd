"""Throughput of ``tokenlean.shorten`` on real tool outputs and on large synthetic inputs.

Run from the repository root::

    python benchmarks/shorten_throughput.py [--repeat 7] [--shared ../shared] [--clock cpu]

For every file in ``shared/data/tool_outputs`` it times ``shorten(text)`` at the defaults
(the median of ``--repeat`` runs) and reports the median time per file and the throughput
over all files (total bytes / total of the per-file medians). It then times a 1 MB log built
from the real SWE-bench test logs, a 10 MB single line, a million short lines and two logs of
100,000 pytest ``E`` lines (the real ``E`` lines of the shared runs' test results, cycled):
whole, so the text is cut to windows first, and each line cut short so the text stays under
``window_above_chars`` and is read line by line (the costlier case). Last, the slowest single
output of all. ``--clock cpu`` times the process's CPU time instead of the wall clock: on a
machine others share, the wall clock also counts their turns.

``--parts`` prints, instead, where the time over the files goes: how much of it the default
token counter (``tokens_before``, ``tokens_after``) and the keyword scans (``Lines.find_all``,
the lower-cased copy included) take, and the throughput the rest alone would allow (the most
that making those two free could give).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tokenlean import shorten
from tokenlean.shorten import DEFAULT_OPTIONS
from tokenlean.shorten._text import Lines
from tokenlean.tokens import EstimateCounter

ROOT = Path(__file__).resolve().parents[1]


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
clock = time.perf_counter
E_LINES = 100_000


def median_seconds(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = clock()
        run()
        times.append(clock() - start)
    return statistics.median(times)


def pytest_e_lines(shared: Path) -> list[str]:
    """The distinct pytest ``E`` lines of the shared runs' tool results, in order (one
    synthetic line without ``shared``)."""
    found: dict[str, None] = {}
    for path in sorted((shared / "data" / "trajectories").glob("*/*.json")):
        for message in json.loads(path.read_text(encoding="utf-8"))["messages"]:
            if message.get("role") == "tool" and isinstance(message.get("content"), str):
                lines = message["content"].split("\n")
                found.update((line, None) for line in lines if line.startswith("E  "))
    return [line for line in found if line.strip() != "E"] or ["E       assert 0 == 1"]


def e_line_logs(shared: Path) -> dict[str, str]:
    """100,000 real ``E`` lines, cycled, each numbered as a parametrised test's are: whole,
    and each cut so the log stays under ``window_above_chars``."""
    real = pytest_e_lines(shared)
    lines = [f"{real[i % len(real)]} [{i}]" for i in range(E_LINES)]
    width = DEFAULT_OPTIONS.window_above_chars // E_LINES - 1
    short = [line[: width - 8] + f"{i:>8}" for i, line in enumerate(lines)]
    return {
        f"{E_LINES:,} pytest E lines, cut to windows": "\n".join(lines),
        f"{E_LINES:,} pytest E lines of {width} chars, read line by line": "\n".join(short),
    }


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
    global clock
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--parts", action="store_true", help="where the files' time goes")
    args = parser.parse_args()
    clock = CLOCKS[args.clock]
    files = real_files(args.shared)
    if args.parts:
        print_parts(files, args.repeat)
        return
    rows = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        seconds = median_seconds(lambda text=text: shorten(text), args.repeat)
        report = shorten(text)
        rows.append((path, len(text.encode()), seconds, report))
    total_bytes = sum(r[1] for r in rows)
    total_seconds = sum(r[2] for r in rows)
    print(f"clock: {args.clock}")
    print("| file | kind | KB | tokens before -> after | ms (median) |")
    print("|---|---|---:|---:|---:|")
    for path, size, seconds, report in rows:
        print(
            f"| {path.parent.name}/{path.name} | {report.kind} | {size / 1024:.1f} "
            f"| {report.tokens_before} -> {report.tokens_after} | {1000 * seconds:.2f} |"
        )
    print()
    if rows:
        print(f"files: {len(rows)}, {total_bytes / 1e6:.3f} MB")
        print(f"median time per file: {1000 * statistics.median(r[2] for r in rows):.2f} ms")
        print(f"throughput over all files: {total_bytes / 1e6 / total_seconds:.1f} MB/s")
    slowest = [(r[2], f"{r[0].parent.name}/{r[0].name}") for r in rows]
    for name, text, repeat in large_inputs(files, args.shared, args.repeat):
        seconds = median_seconds(lambda text=text: shorten(text), repeat)
        print(f"{name} ({len(text.encode()) / 1e6:.2f} MB): {1000 * seconds:.1f} ms")
        slowest.append((seconds, name))
    seconds, name = max(slowest)
    print(f"slowest single output: {1000 * seconds:.1f} ms ({name})")


@contextmanager
def timed(owner: type, name: str, spent: dict[str, float]) -> Iterator[None]:
    """``owner.name`` timed on the wall clock while the block runs (its calls do not nest)."""
    original = getattr(owner, name)

    def run(*args: object, **kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[name] += time.perf_counter() - start

    setattr(owner, name, run)
    try:
        yield
    finally:
        setattr(owner, name, original)


def print_parts(files: list[Path], repeat: int) -> None:
    """The median over ``repeat`` passes of all ``files``: the whole, and the counter's and the
    keyword scans' parts of it (each pass timed on the wall clock, as the parts are)."""
    texts = [path.read_text(encoding="utf-8", errors="replace") for path in files]
    size = sum(len(text.encode()) for text in texts) / 1e6
    passes: list[tuple[float, float, float]] = []
    spent = {"count": 0.0, "find_all": 0.0}
    with timed(EstimateCounter, "count", spent), timed(Lines, "find_all", spent):
        for _ in range(repeat + 1):  # the first pass warms up
            spent.update(count=0.0, find_all=0.0)
            start = time.perf_counter()
            for text in texts:
                shorten(text)
            passes.append((time.perf_counter() - start, spent["count"], spent["find_all"]))
    whole, count, scans = (statistics.median(p[i] for p in passes[1:]) for i in range(3))
    rest = whole - count - scans
    print(f"files: {len(texts)}, {size:.3f} MB; median of {repeat} passes (wall clock)")
    print(f"whole: {1000 * whole:.1f} ms ({size / whole:.1f} MB/s)")
    print(f"token counter: {1000 * count:.1f} ms ({100 * count / whole:.0f}%)")
    print(f"keyword scans: {1000 * scans:.1f} ms ({100 * scans / whole:.0f}%)")
    print(f"the rest: {1000 * rest:.1f} ms ({size / rest:.1f} MB/s if both cost nothing)")


def large_inputs(files: list[Path], shared: Path, repeat: int) -> list[tuple[str, str, int]]:
    """Each large input's name, text and how many runs to time."""
    out = [("1 MB log (real test logs concatenated)", one_mb_log(files), repeat)] if files else []
    out.append(("10 MB single line", "abc " * 2_500_000, 3))
    out.append(("1,000,000 short lines", "\n".join(f"ok {i}" for i in range(1_000_000)), 3))
    out.extend((name, text, 3) for name, text in e_line_logs(shared).items())
    return out


if __name__ == "__main__":
    main()
