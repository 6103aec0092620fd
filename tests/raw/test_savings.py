"""Same savings as the middleware: the raw rewrite makes the middleware's decisions.

On real runs (one per source), the prompts a no-middleware replay sends, rewritten as raw
Anthropic bodies, are compared with the prompts of a replay through
``ToolInputShorteningMiddleware`` + ``ToolOutputShorteningMiddleware``. With the middleware's
markers swapped in, they are the same text, call by call; with the raw rewrite's own markers
(which name a file and cost a few more tokens than ``read_original("o1a2b3")``) the billed
input agrees within 0.01 pooled. ``benchmarks/raw_savings.py`` runs every trajectory.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tokenlean.arguments import marker
from tokenlean.langchain.adapter import to_view
from tokenlean.langchain.input_shortening import ToolInputShorteningMiddleware
from tokenlean.langchain.recommended import INPUT_HEAD_LINES, INPUT_MIN_TOKENS, INPUT_TAIL_LINES
from tokenlean.langchain.shortening import ToolOutputShorteningMiddleware
from tokenlean.raw import RawSettings, rewrite_request
from tokenlean.raw import anthropic as anthropic_view
from tokenlean.raw import history as history_module
from tokenlean.raw.build import body
from tokenlean.raw.replay import measure_bodies
from tokenlean.replay.engine import Replay, replay
from tokenlean.replay.formats import Trajectory
from tokenlean.replay.metrics import PromptMeasurer, RunMetrics, pool
from tokenlean.shorten.markers import Retrieval
from tokenlean.store import InMemoryOriginalStore
from tokenlean.tokens import EstimateCounter

from .conftest import sample_trajectories

RUNS = sample_trajectories(per_source=1, min_calls=4)
needs_shared = pytest.mark.skipif(not RUNS, reason="needs ../shared/data/trajectories")
HANDLE = re.compile(r'"[oi][0-9a-f]{6}\\?"')  # in JSON text the quotes are escaped


def _stack() -> list[Any]:
    store = InMemoryOriginalStore()
    inputs = ToolInputShorteningMiddleware(
        store=store,
        retrieval_tool=False,
        min_tokens=INPUT_MIN_TOKENS,
        head_lines=INPUT_HEAD_LINES,
        tail_lines=INPUT_TAIL_LINES,
    )
    return [inputs, ToolOutputShorteningMiddleware(store=store)]


REPLAYS: dict[str, tuple[Replay, Replay]] = {}


def _replays(run: Trajectory) -> tuple[Replay, Replay]:
    if run.id not in REPLAYS:
        REPLAYS[run.id] = (replay(run, []), replay(run, _stack()))
    return REPLAYS[run.id]


def _middleware_markers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the raw rewrite write the middleware's markers (a tool and a handle, no path)."""

    def retrieval(path: str | None = None) -> Retrieval:
        return Retrieval("o000000", "read_original") if path else Retrieval()

    def point(text: str, original: str, handle: str, path: Path, inputs: Any) -> str:
        omitted = original.count("\n") + 1 - inputs.head_lines - inputs.tail_lines
        return text.replace(marker(omitted, handle, None), marker(omitted, handle, "read_original"))

    monkeypatch.setattr(history_module, "Retrieval", retrieval)
    monkeypatch.setattr(history_module, "_point_to_file", point)


def _texts(messages: list[Any]) -> list[tuple[str, str]]:
    view = anthropic_view.read(body("anthropic", to_view(messages)))
    assert view is not None
    return [
        (m.role, HANDLE.sub('"H"', m.text + "".join(str(dict(c.args)) for c in m.tool_calls)))
        for m in view.messages
    ]


@needs_shared
@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.id[:50])
def test_same_decisions_as_the_middleware(
    run: Trajectory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _middleware_markers(monkeypatch)
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
        read = anthropic_view.read(sent)
        assert read is not None
        raw = [
            (m.role, HANDLE.sub('"H"', m.text + "".join(str(dict(c.args)) for c in m.tool_calls)))
            for m in read.messages
        ]
        assert raw == _texts(after.messages), f"call {k} differs"


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
