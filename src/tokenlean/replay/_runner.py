"""Replay many trajectories through many strategies, in parallel processes.

Each task is one (trajectory, strategy) pair; a worker builds the strategy's middleware fresh, so
no state leaks between replays. Workers count tokens with the exact o200k_base counter when its
vocabulary is local (``TOKENLEAN_TIKTOKEN_DIR``), else with the estimate; the report says which.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field

from tokenlean.replay import _strategies as strategies
from tokenlean.replay._engine import replay_measured
from tokenlean.replay._formats import Trajectory
from tokenlean.replay._metrics import PromptMeasurer, RunMetrics, pool
from tokenlean.replay._raw import measure_prompts
from tokenlean.tokens import TokenCounter, default_counter

__all__ = [
    "ReplayReport",
    "counter_name",
    "run_one",
    "run_replay",
    "shared_measurer",
    "stderr_progress",
]

#: This process's measurer. A worker of the pool runs many tasks (the same trajectory under
#: each strategy, whose prompts share most blocks) and nothing of the pool's outlives a task
#: but the process itself, so the process is the owner that lets a block counted for one task
#: serve the next; made on first use, in the worker.
_MEASURER: PromptMeasurer | None = None


def shared_measurer() -> PromptMeasurer:
    """This process's measurer (one per process, so each distinct block is counted once)."""
    global _MEASURER
    if _MEASURER is None:
        _MEASURER = PromptMeasurer(default_counter())
    return _MEASURER


def counter_name(counter: TokenCounter | None = None) -> str:
    counter = counter or shared_measurer().counter
    name = getattr(counter, "encoding_name", None)
    return f"exact {name}" if name else "estimate (no local tiktoken vocabulary)"


def run_one(trajectory: Trajectory, strategy: str, plugins: Sequence[str] = ()) -> RunMetrics:
    """Replay one trajectory with one named strategy; errors become a row, never a crash."""
    strategies.load_plugins(plugins)
    try:
        chosen = strategies.get(strategy)
        if chosen.way_in is not None:
            prompts = chosen.way_in(trajectory)
            measurer = shared_measurer()
            return measure_prompts(trajectory, prompts, measurer, strategy=strategy, api=None)
        measurer = shared_measurer()
        return replay_measured(trajectory, chosen.factory(), measurer, strategy=strategy)
    except Exception as exc:  # a broken strategy must not take the others down
        detail = f"{type(exc).__name__}: {exc}"
        return RunMetrics(
            strategy=strategy, trajectory=trajectory.id, source=trajectory.source_name, error=detail
        )


@dataclass
class ReplayReport:
    """Every run, the pooled row per strategy (over all runs and per source), and the counter.

    ``by_source[source][strategy]`` pools that strategy's runs on that source's trajectories;
    sources are in name order. ``output_price`` prices output tokens in the whole-bill columns
    (``None``: each pricing preset's own, :attr:`tokenlean.cost.CachePricing.output`).
    """

    strategies: list[str]
    runs: list[RunMetrics]
    counter: str
    output_price: float | None = None
    pooled: dict[str, RunMetrics] = field(default_factory=dict)
    by_source: dict[str, dict[str, RunMetrics]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.strategies:
            self.pooled[name] = pool(name, (r for r in self.runs if r.strategy == name))
        for source in sorted({r.source for r in self.runs}):
            runs = [r for r in self.runs if r.source == source]
            self.by_source[source] = {
                name: pool(name, (r for r in runs if r.strategy == name), source=source)
                for name in self.strategies
            }

    def errors(self) -> list[RunMetrics]:
        return [r for r in self.runs if r.error]


Progress = Callable[[int, int, RunMetrics], None]


def run_replay(
    trajectories: Sequence[Trajectory],
    names: Sequence[str],
    *,
    jobs: int | None = None,
    plugins: Sequence[str] = (),
    progress: Progress | None = None,
) -> ReplayReport:
    """Replay every trajectory through every named strategy; ``jobs=1`` runs in this process."""
    strategies.load_plugins(plugins)
    for name in names:
        strategies.get(name)  # unknown names fail here, before any work
    tasks = [(t, n) for t in _largest_first(trajectories) for n in names]
    jobs = jobs or min(len(tasks), os.cpu_count() or 1)
    runs: list[RunMetrics] = []
    if jobs <= 1:
        for trajectory, name in tasks:
            runs.append(run_one(trajectory, name, plugins))
            if progress:
                progress(len(runs), len(tasks), runs[-1])
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool_:
            futures = [pool_.submit(run_one, t, n, tuple(plugins)) for t, n in tasks]
            for future in as_completed(futures):
                runs.append(future.result())
                if progress:
                    progress(len(runs), len(tasks), runs[-1])
    order = {(t.id, n): i for i, (t, n) in enumerate(tasks)}
    runs.sort(key=lambda r: order.get((r.trajectory, r.strategy), 0))
    return ReplayReport(list(names), runs, counter_name(default_counter()))


def _largest_first(trajectories: Iterable[Trajectory]) -> list[Trajectory]:
    return sorted(trajectories, key=lambda t: -sum(len(m.text) for m in t.messages))


def stderr_progress(done: int, total: int, run: RunMetrics) -> None:
    """A one-line progress bar on stderr (a plain line per 10% when stderr is not a terminal)."""
    width = 30
    filled = width * done // total
    line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {run.strategy}"
    if sys.stderr.isatty():
        end = "\n" if done == total else ""
        print(f"\r{line[:78]:<78}", end=end, file=sys.stderr, flush=True)
    elif done == total or done * 10 // total != (done - 1) * 10 // total:
        print(line, file=sys.stderr, flush=True)
