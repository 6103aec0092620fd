"""Shared fixtures: the shared data folder, exact counters, and a scripted agent builder."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOKENLEAN_SHARED", ROOT.parent / "shared"))
TRAJECTORIES = SHARED / "data" / "trajectories"
TOOL_OUTPUTS = SHARED / "data" / "tool_outputs"
TOKENIZERS = SHARED / "tokenizers"

os.environ.setdefault("TOKENLEAN_TIKTOKEN_DIR", str(TOKENIZERS))


def trajectory_paths() -> list[Path]:
    """Every real trajectory in shared/data (the replay tests run on all of them)."""
    return sorted(TRAJECTORIES.glob("*/*.json"))


@pytest.fixture(scope="session")
def o200k() -> Any:
    from tokenlean.tokens import TiktokenCounter

    return TiktokenCounter("o200k_base", vocab_path=TOKENIZERS)


def scripted_agent(
    responses: Sequence[Any],
    *,
    tools: Sequence[Any] = (),
    middleware: Sequence[Any] = (),
    checkpointer: Any = None,
    system_prompt: str | None = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """A real ``create_agent`` graph driven by a :class:`ScriptedChatModel`; returns both."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from tokenlean.replay.scripted import ScriptedChatModel

    model = ScriptedChatModel(responses=list(responses))
    agent = create_agent(
        model,
        tools=list(tools),
        middleware=list(middleware),
        system_prompt=system_prompt,
        checkpointer=checkpointer if checkpointer is not None else InMemorySaver(),
        **kwargs,
    )
    return agent, model
