"""Cache safety on every real trajectory: first-sight shortening never changes a sent byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from tests.data import TRAJECTORIES, needs_shared, shared_params, trajectory_paths
from tokenlean.langchain import ToolOutputShorteningMiddleware
from tokenlean.langchain._adapter import to_view
from tokenlean.replay._engine import measure_replay, replay
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._metrics import PromptMeasurer
from tokenlean.shorten import shorten
from tokenlean.shorten._firstsight import OutputShorteningSettings
from tokenlean.tokens import DEFAULT_COUNTER, EstimateCounter
from tokenlean.transcript import mark_of


def _mark(message: Any) -> Any:
    """The mark output shortening left on a LangChain message (``None`` when it left none)."""
    return mark_of(to_view([message])[0], "output_shortening")


MEASURER = PromptMeasurer(EstimateCounter())
MIN_TOKENS = OutputShorteningSettings().min_tokens
SHORTENED: dict[str, int] = {}
#: Whether a run has a tool output past the size its content kind is kept whole at (one that
#: ``shorten`` at the defaults, on its own, would change).
LONG: dict[str, bool] = {}


@pytest.mark.parametrize("path", shared_params(trajectory_paths()), ids=lambda p: p.stem[:60])
def test_no_call_changes_bytes_already_sent(path: Path) -> None:
    trajectory = load_trajectory(path)
    result = replay(trajectory, [ToolOutputShorteningMiddleware()])
    metrics = measure_replay(trajectory, result, MEASURER, strategy="shorten")
    # The one change allowed: the tool list, once, when read_original is first offered (the
    # retrieval tool is only offered once something is kept); no message already sent changes.
    assert metrics.prefix_breaks <= 1
    assert all(at == -1 for _, at in metrics.break_positions), metrics.break_positions
    marked = [
        m for m in result.final_messages if isinstance(m, ToolMessage) and _mark(m) is not None
    ]
    SHORTENED[trajectory.id] = len(marked)
    assert not metrics.prefix_breaks or marked, "the tool list changed with nothing kept"
    LONG[trajectory.id] = any(
        m.role == "tool" and DEFAULT_COUNTER.count(m.text) > MIN_TOKENS and shorten(m.text).changed
        for m in trajectory.messages
    )
    for message in marked:  # each shortened result went out shortened from its first call on
        firsts = [c for c in result.calls if any(m.id == message.id for m in c.messages)]
        sent = next(m for m in firsts[0].messages if m.id == message.id)
        assert sent.content == message.content


@needs_shared
def test_shortening_happened_on_most_trajectories() -> None:
    """Shortening happens on most runs of the coding agents; the other sources differ.

    Coding agents read files, grep code and run test suites: outputs long enough to shorten on
    most runs. QA, shopping and customer-service agents (HotpotQA, WebShop, tau2) mostly see
    short, dense observations (search results, product pages, JSON records of a few hundred
    tokens) where there is little worth cutting and a cut that does not pay for itself must
    not be made (issue 11): many of their runs rightly have nothing shortened. Research and
    browser agents (GAIA, WorkArena) do see long documents and pages, but how those are cut is
    their own content kind (issue 11, point 3), so no share is pinned for them here either.
    """
    if len(SHORTENED) < len(trajectory_paths()):
        pytest.skip("run with the per-trajectory replays")
    index = (json.loads(line) for line in (TRAJECTORIES / "index.jsonl").open(encoding="utf-8"))
    source_of = {row["id"]: row["file"].split("/")[0] for row in index}
    by_source: dict[str, list[int]] = {}
    for run, shortened in SHORTENED.items():
        by_source.setdefault(source_of[run], []).append(shortened)
    for source in ("miniswe_deepseek", "sweagent", "openagents_claude_code"):
        runs = by_source[source]
        assert sum(1 for n in runs if n) >= 0.8 * len(runs), (source, runs)


@needs_shared
def test_shortening_happened_on_most_trajectories_with_long_outputs() -> None:
    """Not vacuous: most runs with an output past every keep-whole size were shortened (runs
    of short observations, e.g. search or customer-service agents, rightly pass whole)."""
    if len(SHORTENED) < len(trajectory_paths()):
        pytest.skip("run with the per-trajectory replays")
    long_runs = [run for run, long in LONG.items() if long]
    assert len(long_runs) >= 10
    assert sum(1 for run in long_runs if SHORTENED[run]) >= 0.8 * len(long_runs)
    assert sum(1 for n in SHORTENED.values() if n) >= len(SHORTENED) / 3
