"""Cache safety on real trajectories: each growth of the cleared set costs exactly one break."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, ToolMessage

from tests.data import TRAJECTORIES, needs_shared
from tokenlean.context_editor import ContextEdit
from tokenlean.langchain import ContextEditorMiddleware
from tokenlean.replay._engine import measure_replay, replay
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._metrics import PromptMeasurer
from tokenlean.testing import RecordedCall
from tokenlean.tokens import EstimateCounter

LONG = "miniswe_deepseek/chat_test__django__django-15738.json"  # 114 calls, ~60k tokens at the end


def _cleared_ids(messages: Sequence[BaseMessage]) -> set[str]:
    return {
        m.tool_call_id
        for m in messages
        if isinstance(m, ToolMessage) and m.response_metadata.get("context_editing")
    }


@pytest.mark.parametrize(
    "options",
    [
        {"trigger_tokens": 10_000, "keep": 3},
        {"keep": 3},  # the defaults but keep (30k trigger, batches of 5), the reference's keep
        {"trigger_tokens": 10_000, "mode": "cache_aware", "keep": 3},
        {"trigger_tokens": 15_000, "batch": 2, "keep": 6, "clear_tool_inputs": True},
    ],
)
@needs_shared
def test_prefix_breaks_are_exactly_the_calls_that_clear_a_batch(options: dict[str, Any]) -> None:
    trajectory = load_trajectory(TRAJECTORIES / LONG)
    edits: list[ContextEdit] = []
    editor = ContextEditorMiddleware(**options, on_edit=edits.append)
    result = replay(trajectory, [editor])
    metrics = measure_replay(trajectory, result, PromptMeasurer(EstimateCounter()), strategy="ce")

    batch = options.get("batch", 5)
    assert edits and all(e.batches >= 1 and len(e.cleared) == e.batches * batch for e in edits)
    growing = [i for i, call in enumerate(result.calls) if _grew(result.calls, i)]
    assert len(growing) == len(edits)  # the request changes only when an edit happens
    scripted = [i for i in growing if result.calls[i].scripted]  # what the metrics measure
    assert metrics.prefix_breaks == len(scripted)  # one break per growth, never more
    assert [call for call, _ in metrics.break_positions] == scripted
    assert metrics.prefix_breaks <= sum(e.batches for e in edits)  # at most one break per batch
    # the trigger is judged after earlier clearing, so an edit is followed by calls without one
    assert len(edits) < metrics.calls // 4


def _grew(calls: Sequence[RecordedCall], i: int) -> bool:
    return i > 0 and bool(_cleared_ids(calls[i].messages) - _cleared_ids(calls[i - 1].messages))
