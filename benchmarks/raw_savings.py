"""Does the raw-body rewrite save what the middleware saves? Per source, on the same runs.

Usage (from the repository root)::

    TOKENLEAN_TIKTOKEN_DIR=../shared/tokenizers \\
        python -m benchmarks.raw_savings [TRAJECTORY_DIR] [-j JOBS] [--limit N]

Each trajectory is replayed through a real ``create_agent`` twice: with no middleware, and with
``ToolInputShorteningMiddleware`` + ``ToolOutputShorteningMiddleware`` (the shortening half of
the recommended stack, same settings). The no-middleware prompts are then sent, one request per
model call, as raw Anthropic Messages bodies through ``tokenlean.raw.rewrite_request`` (what
the proxy and the SDK wrappers do). All three are measured after the same round trip through an
Anthropic body (:mod:`tokenlean.raw.replay`), with the replay's metrics. A fourth row measures
the middleware's prompts with the tool schemas of the no-middleware run, to tell what its
``read_original`` tool costs from what its shortening saves. Writes ``benchmarks/raw_savings.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from tokenlean.replay.metrics import PromptMeasurer, RunMetrics, pool
from tokenlean.tokens import default_counter

HERE = Path(__file__).parent
ROWS = ("none", "middleware", "middleware-same-tools", "raw")
_MEASURER: PromptMeasurer | None = None


def _stack() -> list[Any]:
    from tokenlean.langchain.input_shortening import ToolInputShorteningMiddleware
    from tokenlean.langchain.recommended import (
        INPUT_HEAD_LINES,
        INPUT_MIN_TOKENS,
        INPUT_TAIL_LINES,
    )
    from tokenlean.langchain.shortening import ToolOutputShorteningMiddleware
    from tokenlean.store import InMemoryOriginalStore

    store = InMemoryOriginalStore()
    return [
        ToolInputShorteningMiddleware(
            store=store,
            retrieval_tool=False,
            min_tokens=INPUT_MIN_TOKENS,
            head_lines=INPUT_HEAD_LINES,
            tail_lines=INPUT_TAIL_LINES,
        ),
        ToolOutputShorteningMiddleware(store=store),
    ]


def measure_one(path: str, originals: str) -> list[tuple[str, RunMetrics]]:
    """The four rows for one trajectory, each tagged with the trajectory's source."""
    from tokenlean.raw import RawSettings
    from tokenlean.raw.replay import measure_bodies
    from tokenlean.replay.engine import replay
    from tokenlean.replay.formats import load_trajectory

    global _MEASURER
    if _MEASURER is None:
        _MEASURER = PromptMeasurer(default_counter())
    trajectory = load_trajectory(path)
    source = Path(path).parent.name
    plain = replay(trajectory, [])
    shortened = replay(trajectory, _stack())
    settings = RawSettings(originals_dir=Path(originals))
    started = time.perf_counter()
    raw = measure_bodies(trajectory, plain, _MEASURER, strategy="raw", settings=settings)
    raw.middleware_seconds = time.perf_counter() - started  # rewrite + round trip + measuring
    rows = [
        measure_bodies(trajectory, plain, _MEASURER, strategy="none"),
        measure_bodies(trajectory, shortened, _MEASURER, strategy="middleware"),
        measure_bodies(
            trajectory, shortened, _MEASURER, strategy="middleware-same-tools", tools_from=plain
        ),
        raw,
    ]
    return [(source, row) for row in rows]


def run(paths: list[Path], jobs: int, originals: str) -> dict[str, dict[str, RunMetrics]]:
    """Pooled rows by source (and ``(all)``), then by row name."""
    results: list[tuple[str, RunMetrics]] = []
    with ProcessPoolExecutor(max_workers=jobs) as workers:
        futures = [workers.submit(measure_one, str(p), originals) for p in paths]
        for done, future in enumerate(futures, 1):
            results += future.result()
            print(f"\r{done}/{len(futures)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    by_source: dict[str, list[tuple[str, RunMetrics]]] = defaultdict(list)
    for source, row in results:
        by_source[source].append((source, row))
        by_source["(all)"].append((source, row))
    return {
        source: {name: pool(name, (r for _, r in rows if r.strategy == name)) for name in ROWS}
        for source, rows in sorted(by_source.items(), key=lambda kv: kv[0] == "(all)")
    }


def _ratio(row: RunMetrics, base: RunMetrics, attr: str) -> float:
    value, reference = getattr(row, attr), getattr(base, attr)
    return float(value / reference) if reference else 1.0


def table(pooled: dict[str, dict[str, RunMetrics]], runs: dict[str, int]) -> list[str]:
    head = (
        "| source | runs | calls | billed A: middleware | raw | raw − mw | billed O: middleware"
        " | raw | raw − mw | mw, same tools (A) | tokens sent: mw | raw | recall: mw | raw"
        " | raw prefix breaks |"
    )
    lines = [head, "|" + "---|" * 16]
    for source, rows in pooled.items():
        base, mw, raw = rows["none"], rows["middleware"], rows["raw"]
        same = rows["middleware-same-tools"]
        a_mw, a_raw = _ratio(mw, base, "billed_anthropic"), _ratio(raw, base, "billed_anthropic")
        o_mw, o_raw = _ratio(mw, base, "billed_openai"), _ratio(raw, base, "billed_openai")
        lines.append(
            f"| {source} | {runs.get(source, 0)} | {base.calls:,} | {a_mw:.3f} | {a_raw:.3f}"
            f" | {a_raw - a_mw:+.3f} | {o_mw:.3f} | {o_raw:.3f} | {o_raw - o_mw:+.3f}"
            f" | {_ratio(same, base, 'billed_anthropic'):.3f}"
            f" | {_ratio(mw, base, 'tokens_sent'):.3f} | {_ratio(raw, base, 'tokens_sent'):.3f}"
            f" | {mw.recall:.3f} | {raw.recall:.3f} | {raw.prefix_breaks} |"
        )
    return lines


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "directory", nargs="?", default=str(HERE.parent.parent / "shared" / "data" / "trajectories")
    )
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="at most N runs per source")
    parser.add_argument("--output", default=str(HERE / "raw_savings.md"))
    args = parser.parse_args(list(argv) if argv is not None else None)
    paths = sorted(Path(args.directory).glob("*/*.json"))
    if args.limit:
        kept: dict[str, list[Path]] = defaultdict(list)
        for p in paths:
            if len(kept[p.parent.name]) < args.limit:
                kept[p.parent.name].append(p)
        paths = [p for group in kept.values() for p in group]
    if not paths:
        print(f"no trajectories under {args.directory}", file=sys.stderr)
        return 1
    runs: dict[str, int] = defaultdict(int)
    for p in paths:
        runs[p.parent.name] += 1
        runs["(all)"] += 1
    originals = tempfile.mkdtemp(prefix="tokenlean-originals-")
    started = time.perf_counter()
    pooled = run(paths, args.jobs, originals)
    minutes = (time.perf_counter() - started) / 60
    lines = table(pooled, runs)
    print("\n".join(lines))
    _write(Path(args.output), lines, pooled, originals, minutes, args)
    return 0


def _write(
    out: Path,
    lines: list[str],
    pooled: dict[str, dict[str, RunMetrics]],
    originals: str,
    minutes: float,
    args: argparse.Namespace,
) -> None:
    counter = getattr(default_counter(), "encoding_name", None) or "estimate"
    raw = pooled["(all)"]["raw"]
    ms = 1000 * raw.middleware_seconds / raw.calls if raw.calls else 0.0
    text = [
        "# Raw-body rewrite against the middleware",
        "",
        "Generated by `python -m benchmarks.raw_savings"
        + (f" --limit {args.limit}" if args.limit else "")
        + f"` ({minutes:.1f} min, {platform.python_version()}, tokens: {counter}, "
        f"originals in `{originals}` ({len(originals)} chars; markers name files there)).",
        "Ratios are against no middleware on the same runs; both sides are measured after the",
        "same round trip through an Anthropic Messages body (see the module docstring).",
        "",
        *lines,
        "",
        f"Rewrite, read-back and measuring took {ms:.2f} ms per call (2-core machine shared with"
        " other work).",
        "",
    ]
    out.write_text("\n".join(text), encoding="utf-8")
    os.sync()


if __name__ == "__main__":
    raise SystemExit(main())
