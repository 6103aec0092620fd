"""What several benchmark scripts share: which runs they take, one token measurer per process,
the process pool with its progress line (and the timed run of one task over every run), the
recommended stack's shortener, and the stack with its shortener's settings changed (for the
tuning grids)."""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from tokenlean.replay._metrics import PromptMeasurer
from tokenlean.shorten._output_settings import OfferTool
from tokenlean.tokens import default_counter

T = TypeVar("T")
_MEASURER: PromptMeasurer | None = None


#: The shared trajectories, beside the checkout (``../shared``), where every benchmark reads them.
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "trajectories"


def parser(doc: str | None, output: Path) -> argparse.ArgumentParser:
    """The arguments every per-source benchmark takes: the folder, jobs, a per-source limit and
    the report it writes (``output``, by default)."""
    p = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    p.add_argument("directory", nargs="?", default=str(DATA))
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--limit", type=int, default=0, help="at most N runs per source")
    p.add_argument("--output", default=str(output))
    return p


def select(directory: Path, limit: int) -> list[Path]:
    """The runs in index order (file name order within each source), at most ``limit`` per
    source when it is given."""
    paths = sorted(directory.glob("*/*.json"))
    if not limit:
        return paths
    kept: dict[str, list[Path]] = defaultdict(list)
    for p in paths:
        if len(kept[p.parent.name]) < limit:
            kept[p.parent.name].append(p)
    return [p for group in kept.values() for p in group]


def measurer() -> PromptMeasurer:
    """This process's measurer (it remembers each block it measured, so calls share the work)."""
    global _MEASURER
    if _MEASURER is None:
        _MEASURER = PromptMeasurer(default_counter())
    return _MEASURER


def in_parallel(task: Callable[..., T], paths: Sequence[Path], jobs: int, *args: Any) -> list[T]:
    """``task(str(path), *args)`` for every path on ``jobs`` processes, in order, with a
    progress count on stderr."""
    results: list[T] = []
    with ProcessPoolExecutor(max_workers=jobs) as workers:
        futures = [workers.submit(task, str(p), *args) for p in paths]
        for done, future in enumerate(futures, 1):
            results.append(future.result())
            print(f"\r{done}/{len(futures)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return results


def measure_runs(
    args: argparse.Namespace, task: Callable[[str], T]
) -> tuple[list[T], float] | None:
    """``task`` of every run ``args`` select (:func:`parser`'s folder and limit) on ``args.jobs``
    processes, and the minutes that took; ``None``, said on stderr, when there is no run."""
    paths = select(Path(args.directory), args.limit)
    if not paths:
        print(f"no trajectories under {args.directory}", file=sys.stderr)
        return None
    started = time.perf_counter()
    results = in_parallel(task, paths, args.jobs)
    return results, (time.perf_counter() - started) / 60


def shortener(offer_tool: OfferTool) -> list[Any]:
    """The recommended stack's shortener alone (``ToolOutputShorteningMiddleware`` with
    ``RECOMMENDED_INPUTS``); ``"always"`` offers ``read_original`` from the first call, so every
    shortening is made (the decisions the raw rewrite and the other adapters make)."""
    from tokenlean.langchain.output_shortening import ToolOutputShorteningMiddleware
    from tokenlean.shorten import RECOMMENDED_INPUTS

    return [ToolOutputShorteningMiddleware(offer_tool=offer_tool, inputs=RECOMMENDED_INPUTS)]


def recommended_with(**settings: Any) -> list[Any]:
    """``recommended_middleware("anthropic")`` with its output shortener built again with these
    keyword arguments (``options=``, ``offer_tool=``, ``start_share=``...), everything else as
    the stack ships it: its store, pricing and ``RECOMMENDED_INPUTS``."""
    from tokenlean.langchain import ToolOutputShorteningMiddleware, recommended_middleware
    from tokenlean.shorten import RECOMMENDED_INPUTS

    out: list[Any] = []
    for m in recommended_middleware("anthropic"):
        if isinstance(m, ToolOutputShorteningMiddleware):
            m = ToolOutputShorteningMiddleware(
                store=m.stores, pricing=m.policy.pricing, inputs=RECOMMENDED_INPUTS, **settings
            )
        out.append(m)
    return out
