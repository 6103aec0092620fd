"""Does the raw-body rewrite save what the middleware saves? Per source, on the same runs.

Usage (from the repository root)::

    TOKENLEAN_TIKTOKEN_DIR=../shared/tokenizers \\
        python -m benchmarks.raw_savings [TRAJECTORY_DIR] [-j JOBS] [--limit N]

Each trajectory is replayed through a real ``create_agent`` three times: with no middleware,
with ``ToolOutputShorteningMiddleware(inputs=RECOMMENDED_INPUTS)`` (the shortening half of the
recommended stack, same settings: every result shortened at first sight, ``read_original`` added
to the tool list only where that re-writes no warm cache), and with the same shortener offering
``read_original`` from the first call (``offer_tool="always"``). Both make the decisions the raw
rewrite makes; a proxy's markers name files and add no tool. The no-middleware prompts are then
sent, one request per model call, as raw Anthropic Messages bodies through
``tokenlean.raw.rewrite_request`` (what the proxy and the SDK wrappers do). All rows are
measured after the same round trip through an Anthropic body (:mod:`tokenlean.replay._raw`),
with the replay's metrics. One more row measures the always-offering middleware's prompts with
the tool schemas of the no-middleware run, to tell what its ``read_original`` tool costs from
what its shortening saves. Writes ``benchmarks/raw_savings.md``.
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
from pathlib import Path

from benchmarks import _common as common
from benchmarks._common import in_parallel, measurer, select, shortener
from tokenlean.replay._metrics import RunMetrics, pool
from tokenlean.tokens import default_counter

HERE = Path(__file__).parent
ROWS = ("none", "middleware", "middleware-always", "middleware-same-tools", "raw")
EXPLANATION = [
    "How to read it. *mw* is the middleware as shipped: it shortens every result at first",
    "sight, and adds its `read_original` tool to a thread's tool list only where that re-writes",
    "no warm cache (from the first call when the schema is at most 1% of that prompt, else at a",
    "call whose cache went cold; a replay has no clock, so here only the first can happen): no",
    'prefix break, in *prefix breaks: mw*. *mw always* (`offer_tool="always"`) lists the tool',
    "from the first call. A proxy's markers name files and add no tool; the raw rewrite makes the",
    "same decisions as both, the same results and inputs cut to the same lines",
    "(`tests/raw/test_savings.py` checks it call by call), so its reference recall is theirs.",
    "Against *mw always* the bills differ for two reasons only:",
    "",
    "- the middleware adds its `read_original` tool to every request, and the raw rewrite adds",
    "  nothing (column *mw always w/o its tool* measures that middleware's prompts with the",
    "  plain tool schemas). On short runs where little is shortened that schema is most of the",
    "  difference and makes the always-offering middleware bill more than no middleware; on",
    "  OpenAI-style pricing it can also lift a short prompt over the 1,024-token caching floor,",
    "  which is why it bills *less* there on WebShop;",
    "- markers say where the original is in different words: the raw rewrite names the file",
    "  and line range once per result (`full output: /path/f.txt lines 6-17`, a few tokens",
    '  more than `read_original("o1a2b3", "6-17")`) and then gives lines only',
    "  (`full output lines 31-57`); cut inputs name the file too.",
    "  Column *raw − that* is this effect alone.",
]


def measure_one(path: str, originals: str) -> list[tuple[str, RunMetrics]]:
    """The four rows for one trajectory, each tagged with the trajectory's source."""
    from tokenlean.raw import RawSettings
    from tokenlean.replay._engine import replay
    from tokenlean.replay._formats import load_trajectory
    from tokenlean.replay._raw import measure_bodies

    m = measurer()
    trajectory = load_trajectory(path)
    source = Path(path).parent.name
    plain = replay(trajectory, [])
    shortened = replay(trajectory, shortener("when_it_pays"))
    always = replay(trajectory, shortener("always"))
    settings = RawSettings(originals_dir=Path(originals))
    raw = measure_bodies(trajectory, plain, m, strategy="raw", settings=settings)
    rows = [
        measure_bodies(trajectory, plain, m, strategy="none"),
        measure_bodies(trajectory, shortened, m, strategy="middleware"),
        measure_bodies(trajectory, always, m, strategy="middleware-always"),
        measure_bodies(trajectory, always, m, strategy="middleware-same-tools", tools_from=plain),
        raw,
    ]
    return [(source, row) for row in rows]


def run(paths: list[Path], jobs: int, originals: str) -> dict[str, dict[str, RunMetrics]]:
    """Pooled rows by source (and ``(all)``), then by row name."""
    results = [row for rows in in_parallel(measure_one, paths, jobs, originals) for row in rows]
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
    """One row per source: billed input (Anthropic- and OpenAI-style) of the middleware (as
    shipped, and offering its tool from the start) and of the raw rewrite, the always-offering
    middleware measured without its ``read_original`` schema, tokens sent, reference recall and
    prefix breaks."""
    head = (
        "| source | runs | calls | billed A: mw | mw always | raw | raw − mw | mw always w/o its"
        " tool | raw − that | billed O: mw | mw always | raw | tokens sent: mw | raw"
        " | recall: mw | mw always | raw | prefix breaks: mw | raw |"
    )
    lines = [head, "|---|" + "---:|" * 18]
    for source, rows in pooled.items():
        base, mw, always, raw = (
            rows[k] for k in ("none", "middleware", "middleware-always", "raw")
        )
        a_mw, a_raw = _ratio(mw, base, "billed_anthropic"), _ratio(raw, base, "billed_anthropic")
        a_always = _ratio(always, base, "billed_anthropic")
        a_same = _ratio(rows["middleware-same-tools"], base, "billed_anthropic")
        o_mw, o_raw = _ratio(mw, base, "billed_openai"), _ratio(raw, base, "billed_openai")
        o_always = _ratio(always, base, "billed_openai")
        lines.append(
            f"| {source} | {runs.get(source, 0)} | {base.calls:,} | {a_mw:.3f} | {a_always:.3f}"
            f" | {a_raw:.3f} | {a_raw - a_mw:+.3f} | {a_same:.3f} | {a_raw - a_same:+.3f}"
            f" | {o_mw:.3f} | {o_always:.3f} | {o_raw:.3f}"
            f" | {_ratio(mw, base, 'tokens_sent'):.3f} | {_ratio(raw, base, 'tokens_sent'):.3f}"
            f" | {mw.recall:.3f} | {always.recall:.3f} | {raw.recall:.3f}"
            f" | {mw.prefix_breaks} | {raw.prefix_breaks} |"
        )
    return lines


def main(argv: Iterable[str] | None = None) -> int:
    parser = common.parser(__doc__, HERE / "raw_savings.md")
    parser.add_argument(
        "--originals",
        default=str(Path(tempfile.gettempdir()) / "tokenlean-cache" / "originals"),
        help="where originals are written (the markers name it; its length costs tokens)",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    paths = select(Path(args.directory), args.limit)
    if not paths:
        print(f"no trajectories under {args.directory}", file=sys.stderr)
        return 1
    runs: dict[str, int] = defaultdict(int)
    for p in paths:
        runs[p.parent.name] += 1
        runs["(all)"] += 1
    # A fixed path: the markers name it, and random characters would change token counts.
    originals = args.originals
    Path(originals).mkdir(parents=True, exist_ok=True)
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
    text = [
        "# Raw-body rewrite against the middleware",
        "",
        "Generated by `python -m benchmarks.raw_savings"
        + (f" --limit {args.limit}" if args.limit else "")
        + f" -j {args.jobs}` on {time.strftime('%Y-%m-%d')} ({minutes:.1f} min; "
        f"{platform.platform()}, {os.cpu_count()} cores shared with other work, "
        f"Python {platform.python_version()}; tokens: {counter}; "
        f"originals in `{originals}`, {len(originals)} chars, which the markers name).",
        "Every run in the trajectory folder, replayed with no middleware and with",
        "`ToolOutputShorteningMiddleware(inputs=RECOMMENDED_INPUTS)` (the recommended",
        "stack's shortener), as shipped (*mw*) and offering `read_original` from the first call",
        "(*mw always*); the raw rewrite takes the no-middleware prompts as Anthropic Messages",
        "bodies, one request per model call. Ratios are against no middleware on the same runs;",
        "all rows are measured after the same round trip through an Anthropic body.",
        "",
        *lines,
        "",
        *EXPLANATION,
        "",
        "What the rewrite costs per request: `python -m benchmarks.raw_rewrite_time`.",
        "",
    ]
    out.write_text("\n".join(text), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
