"""Same savings as the middleware: the raw rewrite makes the middleware's decisions.

On real runs (one per source), the prompts a no-middleware replay sends, planned by the raw
rewrite's planner, are compared with the prompts of a replay through
the recommended shortener (``ToolOutputShorteningMiddleware`` given ``inputs``): given the same
read-back they are the same bytes, call by call; behind a proxy the markers name files, and the
billed input agrees within 0.01.
``benchmarks/raw_savings.py`` runs every trajectory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tokenlean.langchain._adapter import to_view
from tokenlean.langchain.output_shortening import ToolOutputShorteningMiddleware
from tokenlean.pipeline import HistoryPlan, Planner
from tokenlean.raw import RawSettings, rewrite_request
from tokenlean.raw.bodies import body
from tokenlean.readback import ToolReadBack
from tokenlean.replay._engine import Replay, replay
from tokenlean.replay._formats import Trajectory
from tokenlean.replay._metrics import PromptMeasurer, RunMetrics, pool
from tokenlean.replay._raw import measure_bodies
from tokenlean.shorten import RECOMMENDED_INPUTS
from tokenlean.store import RETRIEVAL_TOOL
from tokenlean.tokens import EstimateCounter
from tokenlean.transcript import Message, ToolCall

from .conftest import sample_trajectories

RUNS = sample_trajectories(per_source=1, min_calls=4)
needs_shared = pytest.mark.skipif(not RUNS, reason="needs ../shared/data/trajectories")


def _stack() -> list[Any]:
    """The recommended shortener: one middleware planning inputs, then outputs, per call;
    offered from the start, as a proxy's markers (files, no tool) cost nothing to offer."""
    return [ToolOutputShorteningMiddleware(offer_tool="always", inputs=RECOMMENDED_INPUTS)]


REPLAYS: dict[str, tuple[Replay, Replay]] = {}


def _replays(run: Trajectory) -> tuple[Replay, Replay]:
    if run.id not in REPLAYS:
        REPLAYS[run.id] = (replay(run, []), replay(run, _stack()))
    return REPLAYS[run.id]


def _texts(messages: Sequence[Message]) -> list[tuple[str, str]]:
    return [
        (m.role, m.text + "".join(json.dumps(dict(c.args)) for c in m.tool_calls)) for m in messages
    ]


def _planned(view: Sequence[Message], plan: HistoryPlan) -> list[Message]:
    out = list(view)
    for edit in (planned.edit for planned in plan.edits):
        message = out[edit.index]
        if isinstance(edit.new_content, str):
            out[edit.index] = replace(message, content=edit.new_content)
        else:
            calls = tuple(
                ToolCall(c.id, c.name, edit.tool_args.get(c.id, c.args)) for c in message.tool_calls
            )
            out[edit.index] = replace(message, tool_calls=calls)
    return out


@needs_shared
@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.id[:50])
def test_same_decisions_as_the_middleware(run: Trajectory, tmp_path: Path) -> None:
    """The raw rewrite's planner, given the read-back the middleware uses (its
    ``read_original`` tool), sends the middleware's prompts byte for byte: both run
    :func:`tokenlean.pipeline.plan_turn`. Only the read-back differs behind a proxy."""
    plain, shortened = _replays(run)
    settings = RawSettings(originals_dir=tmp_path)
    planner = Planner(replace(settings.policy(), read_back=ToolReadBack(RETRIEVAL_TOOL)))
    pairs = list(
        zip(
            [c for c in plain.calls if c.scripted],
            [c for c in shortened.calls if c.scripted],
            strict=True,
        )
    )
    for k, (before, after) in enumerate(pairs):
        view = to_view(before.messages)
        assert _texts(_planned(view, planner.plan(view))) == _texts(to_view(after.messages)), k


@needs_shared
@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.id[:50])
def test_raw_markers_name_files(run: Trajectory, tmp_path: Path) -> None:
    """Behind a proxy every hint names a file the agent can open, and the file is there."""
    plain, _ = _replays(run)
    settings = RawSettings(originals_dir=tmp_path)
    for call in (c for c in plain.calls if c.scripted):
        request = body("anthropic", to_view(call.messages))
        result = rewrite_request("anthropic", request, settings=settings)
        sent = json.dumps(result.body if result is not None else request)
        assert "read_original(" not in sent
        for name in re.findall(r"full (?:output|input): \S*?/(o\d{12}\.txt)", sent):
            assert (tmp_path / name).is_file()


@needs_shared
def test_billed_input_agrees_with_the_middleware(tmp_path: Path) -> None:
    measurer = PromptMeasurer(EstimateCounter())
    settings = RawSettings(originals_dir=tmp_path)
    rows: list[RunMetrics] = []
    for run in RUNS:
        plain, shortened = _replays(run)
        rows.append(measure_bodies(run, plain, measurer, strategy="none"))
        rows.append(measure_bodies(run, shortened, measurer, strategy="middleware"))
        rows.append(measure_bodies(run, plain, measurer, strategy="raw", settings=settings))
    none, middleware, raw = (
        pool(n, (r for r in rows if r.strategy == n)) for n in ("none", "middleware", "raw")
    )
    assert raw.prefix_breaks == 0
    mw_ratio = middleware.billed_anthropic / none.billed_anthropic
    raw_ratio = raw.billed_anthropic / none.billed_anthropic
    assert raw_ratio < 0.95  # it saves
    print(f"billed (Anthropic): middleware {mw_ratio:.3f}, raw {raw_ratio:.3f}")
    assert abs(raw_ratio - mw_ratio) <= 0.01
    assert raw.recall >= middleware.recall - 0.01
