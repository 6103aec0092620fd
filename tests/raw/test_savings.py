"""Same savings as the middleware: the raw rewrite makes the middleware's decisions.

On real runs (one per source), the prompts a no-middleware replay sends, rewritten as raw
Anthropic bodies, are compared with the prompts of a replay through
``ToolInputShorteningMiddleware`` + ``ToolOutputShorteningMiddleware``: call by call they are
the same text but for where the markers say the original is (a file and lines instead of
``read_original("o1a2b3", "5-9")``), and the billed input agrees within 0.01.
``benchmarks/raw_savings.py`` runs every trajectory.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tokenlean.langchain.adapter import to_view
from tokenlean.langchain.input_shortening import ToolInputShorteningMiddleware
from tokenlean.langchain.output_shortening import ToolOutputShorteningMiddleware
from tokenlean.langchain.recommended import INPUT_HEAD_LINES, INPUT_MIN_TOKENS, INPUT_TAIL_LINES
from tokenlean.raw import RawSettings, rewrite_request
from tokenlean.raw import anthropic as anthropic_view
from tokenlean.replay.engine import Replay, replay
from tokenlean.replay.formats import Trajectory
from tokenlean.replay.metrics import PromptMeasurer, RunMetrics, pool
from tokenlean.replay.raw import measure_bodies
from tokenlean.store import InMemoryOriginalStore
from tokenlean.testing.bodies import body
from tokenlean.tokens import EstimateCounter

from .conftest import sample_trajectories

RUNS = sample_trajectories(per_source=1, min_calls=4)
needs_shared = pytest.mark.skipif(not RUNS, reason="needs ../shared/data/trajectories")
# Where a marker says the original is: the middleware names its tool and a handle, the raw
# rewrite a file and lines. Both become W[span] (W for an input) to compare the rest (a path
# ends before the "; its headings" or "]" of a JSON string marker).
MW_OUTPUT = re.compile(r'read_original\(\\?"o\d+\\?"(?:, \\?"(\d+(?:-\d+)?)\\?")?\)')
RAW_OUTPUT = re.compile(r"full output(?:: [^\s\"\\;\]]+)?(?: lines? (\d+(?:-\d+)?))?")
MW_INPUT = re.compile(r'read_original\(\\?"i\d+\\?"\) shows them')
RAW_INPUT = re.compile(r"full input: \S+ lines \d+-\d+")


def _where(text: str) -> str:
    text = MW_INPUT.sub("W", RAW_INPUT.sub("W", text))
    return MW_OUTPUT.sub(r"W[\1]", RAW_OUTPUT.sub(r"W[\1]", text))


def _stack() -> list[Any]:
    store = InMemoryOriginalStore()
    inputs = ToolInputShorteningMiddleware(
        store=store,
        retrieval_tool=False,
        min_tokens=INPUT_MIN_TOKENS,
        head_lines=INPUT_HEAD_LINES,
        tail_lines=INPUT_TAIL_LINES,
        offer_tool="always",
    )
    # offered from the start, as a proxy's markers (files, no tool) cost nothing to offer
    return [inputs, ToolOutputShorteningMiddleware(store=store, offer_tool="always")]


REPLAYS: dict[str, tuple[Replay, Replay]] = {}


def _replays(run: Trajectory) -> tuple[Replay, Replay]:
    if run.id not in REPLAYS:
        REPLAYS[run.id] = (replay(run, []), replay(run, _stack()))
    return REPLAYS[run.id]


def _texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    view = anthropic_view.read(request)
    assert view is not None
    return [
        (m.role, _where(m.text + "".join(json.dumps(dict(c.args)) for c in m.tool_calls)))
        for m in view.messages
    ]


@needs_shared
@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.id[:50])
def test_same_decisions_as_the_middleware(run: Trajectory, tmp_path: Path) -> None:
    plain, shortened = _replays(run)
    settings = RawSettings(originals_dir=tmp_path)
    pairs = list(
        zip(
            [c for c in plain.calls if c.scripted],
            [c for c in shortened.calls if c.scripted],
            strict=True,
        )
    )
    for k, (before, after) in enumerate(pairs):
        request = body("anthropic", to_view(before.messages))
        result = rewrite_request("anthropic", request, settings=settings)
        sent = result.body if result is not None else request
        assert "read_original(" not in str(sent["messages"])  # every hint became a path
        assert _texts(sent) == _texts(body("anthropic", to_view(after.messages))), f"call {k}"


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
