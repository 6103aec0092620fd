"""Is every shipped default never dearer than no middleware, on every source, at today's prices?

Usage (from the repository root)::

    TOKENLEAN_TIKTOKEN_DIR=../shared/tokenizers \\
        python -m benchmarks.price_tables [TRAJECTORY_DIR] [-j JOBS] [--limit N]

Each trajectory is replayed through a real ``create_agent`` with no middleware and with each
shipped default, and every run is billed under each of the five price tables a default is
judged by (:data:`tokenlean.cost.PRICE_TABLES`: Anthropic's 5-minute cache with reads at 0.1
and at 0.05, Anthropic's one-hour cache, OpenAI with free and with paid cache writes). A
default that decides by price (the recommended stack, the output shortener, the context
editor, the token-saving middleware) is built with that table's pricing, as a user of that
model would build it, and replayed once per table; the others are replayed once and billed
under each. The raw rewrite
(what the proxy, the SDK wrappers and the LiteLLM callback send) rewrites the no-middleware
prompts as Anthropic bodies (:mod:`tokenlean.replay._raw`), measured against no middleware
after the same round trip. Writes ``benchmarks/price_tables.md``: per default, the ratio of its
billed input to no middleware's, per source and table, and the worst source of each table.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks import _common as common
from benchmarks._common import measurer
from tokenlean.cost import PRICE_TABLES, PRICING
from tokenlean.replay._metrics import RunMetrics, pool
from tokenlean.tokens import default_counter

HERE = Path(__file__).parent
#: The defaults built with a table's pricing (replayed once per table).
PRICED = ("recommended", "shorten", "context-editor", "token-saving")
#: The defaults that do not decide by price (replayed once, billed under each table).
UNPRICED = ("loop-guard", "raw")
DEFAULTS = (*PRICED, *UNPRICED)


def _priced(name: str, table: str) -> list[Any]:
    from tokenlean.langchain import (
        ContextEditorMiddleware,
        TokenSavingMiddleware,
        ToolOutputShorteningMiddleware,
        recommended_middleware,
    )

    pricing = PRICING[table]
    builders: dict[str, Callable[[], list[Any]]] = {
        "recommended": lambda: recommended_middleware(pricing),
        "shorten": lambda: [ToolOutputShorteningMiddleware(pricing=pricing)],
        "context-editor": lambda: [ContextEditorMiddleware(pricing=pricing)],
        "token-saving": lambda: [TokenSavingMiddleware(pricing=pricing)],
    }
    return builders[name]()


def _unpriced(name: str) -> list[Any]:
    from tokenlean.langchain import LoopGuardMiddleware

    return [LoopGuardMiddleware()]


def measure_one(path: str, originals: str) -> list[tuple[str, str, str, RunMetrics]]:
    """``(source, default, table, run)`` for one trajectory; ``table`` is ``""`` for a run that
    is billed under every table (no middleware, and the defaults that do not decide by price)."""
    from tokenlean.raw import RawSettings
    from tokenlean.replay._engine import measure_replay, replay
    from tokenlean.replay._formats import load_trajectory
    from tokenlean.replay._raw import measure_bodies

    m = measurer()
    trajectory = load_trajectory(path)
    source = Path(path).parent.name

    def run(name: str, middleware: list[Any]) -> RunMetrics:
        return measure_replay(trajectory, replay(trajectory, middleware), m, strategy=name)

    plain = replay(trajectory, [])
    out = [(source, "none", "", measure_replay(trajectory, plain, m, strategy="none"))]
    settings = RawSettings(originals_dir=Path(originals))
    out.append((source, "raw-none", "", measure_bodies(trajectory, plain, m, strategy="none")))
    out.append(
        (source, "raw", "", measure_bodies(trajectory, plain, m, strategy="raw", settings=settings))
    )
    out.append((source, "loop-guard", "", run("loop-guard", _unpriced("loop-guard"))))
    for table in PRICE_TABLES:
        out += [(source, name, table, run(name, _priced(name, table))) for name in PRICED]
    return out


Rows = dict[tuple[str, str, str], RunMetrics]  # (source, default, table) -> pooled run


def pooled(results: Iterable[tuple[str, str, str, RunMetrics]]) -> Rows:
    """Runs pooled per source (and over ``(all)``), default and table."""
    groups: dict[tuple[str, str, str], list[RunMetrics]] = defaultdict(list)
    for source, name, table, run in results:
        groups[(source, name, table)].append(run)
        groups[("(all)", name, table)].append(run)
    return {key: pool(key[1], runs, source=key[0]) for key, runs in groups.items()}


def ratio(rows: Rows, source: str, name: str, table: str) -> float:
    """``name``'s billed input over no middleware's on ``source`` under ``table`` (the raw
    rewrite against no middleware after the same round trip)."""
    pricing = PRICING[table]
    own = rows[(source, name, table if name in PRICED else "")].billed_under(pricing)
    base = rows[(source, "raw-none" if name == "raw" else "none", "")].billed_under(pricing)
    return own / base if base else 1.0


def tables(rows: Rows) -> list[str]:
    """Per default, a table of sources by price table (worst source last), and the recall."""
    sources = [*sorted({s for s, _, _ in rows if s != "(all)"}), "(all)"]
    lines: list[str] = []
    for name in DEFAULTS:
        head = " | ".join(PRICE_TABLES)
        lines += [f"### {name}", "", f"| source | {head} | recall |", "|---|" + "---:|" * 6]
        for source in sources:
            cells = [ratio(rows, source, name, t) for t in PRICE_TABLES]
            recall = rows[(source, name, PRICE_TABLES[0] if name in PRICED else "")].recall
            lines.append(_row(source, cells, recall))
        worst = [max(ratio(rows, s, name, t) for s in sources[:-1]) for t in PRICE_TABLES]
        lines += [_row("**worst source**", worst, None), ""]
    return lines


def _row(label: str, cells: list[float], recall: float | None) -> str:
    figures = " | ".join(f"**{c:.3f}**" if c > 1.0005 else f"{c:.3f}" for c in cells)
    return f"| {label} | {figures} | {'' if recall is None else f'{recall:.3f}'} |"


def main(argv: Iterable[str] | None = None) -> int:
    parser = common.parser(__doc__, HERE / "price_tables.md")
    parser.add_argument(
        "--originals",
        default=str(Path(tempfile.gettempdir()) / "tokenlean-cache" / "originals"),
        help="where the raw rewrite writes originals (the markers name it)",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    Path(args.originals).mkdir(parents=True, exist_ok=True)
    done = common.measure_runs(args, partial(measure_one, originals=args.originals))
    if done is None:
        return 1
    measured, minutes = done
    rows = pooled(r for rs in measured for r in rs)
    lines = tables(rows)
    print("\n".join(lines))
    _write(Path(args.output), lines, len(measured), minutes, args)
    above = [line for line in lines if "**" in line and "worst" not in line]
    return 1 if above else 0


def _write(
    out: Path, lines: list[str], runs: int, minutes: float, args: argparse.Namespace
) -> None:
    counter = getattr(default_counter(), "encoding_name", None) or "estimate"
    limit = f" --limit {args.limit}" if args.limit else ""
    text = [
        "# Every shipped default against no middleware, under each price table",
        "",
        f"Generated by `python -m benchmarks.price_tables{limit} -j {args.jobs}` on "
        f"{time.strftime('%Y-%m-%d')} ({runs} runs, {minutes:.1f} min; {platform.platform()}, "
        f"{os.cpu_count()} cores shared with other work, Python {platform.python_version()}; "
        f"tokens: {counter}).",
        "Billed input of each default over no middleware's, on the same runs, per source and",
        "price table (`tokenlean.cost.PRICE_TABLES`); a figure above 1.000 is in bold. The",
        "recommended stack, the output shortener, the context editor and the token-saving",
        "middleware are built with the table's pricing and replayed once per table; the loop",
        "guard (which does not decide by price) and the raw rewrite (the proxy's, the SDK",
        "wrappers' and the LiteLLM callback's, against no middleware after the same round trip",
        "through an Anthropic body) are replayed once and billed under each table. Recall is",
        "the reference recall (under the first table for a priced default). The loop guard",
        "is in no stack by default (`recommended_middleware(loop_guard=True)` adds it): it is",
        "here for what it costs. It changes no byte sent: it appends a nudge, then a request to",
        "answer, to a run it finds looping (it fires on no resolved run: `loops.md`); the",
        "replayed model ignores them, so its figure is what they cost plus what ending a run",
        "at its last rung saves, never what a model that obeys would save.",
        "",
        *lines,
    ]
    out.write_text("\n".join(text) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
