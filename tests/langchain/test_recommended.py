from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from tests.data import TRAJECTORIES, needs_shared, needs_vocab, skip_unless_here, trajectory_paths
from tests.langchain._agents import coding_agent
from tokenlean.context_editor import SAFETY_NET_SHARE
from tokenlean.cost import CachePricing
from tokenlean.langchain import (
    ContextEditorMiddleware,
    LoopGuardMiddleware,
    ToolOutputShorteningMiddleware,
)
from tokenlean.langchain.recommended import recommended_middleware
from tokenlean.replay._engine import measure_replay, replay
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._metrics import PromptMeasurer
from tokenlean.shorten import RECOMMENDED_INPUTS
from tokenlean.tokens import TiktokenCounter


def test_stack_shape_one_shortener_for_inputs_and_outputs() -> None:
    stack = recommended_middleware("anthropic")
    assert [type(m) for m in stack] == [ToolOutputShorteningMiddleware]
    assert stack[0].inputs == RECOMMENDED_INPUTS  # one plan per call: inputs, then outputs
    assert [t.name for m in stack for t in getattr(m, "tools", [])] == ["read_original"]
    assert [type(m) for m in recommended_middleware("openai", loop_guard=True)] == [
        ToolOutputShorteningMiddleware,
        LoopGuardMiddleware,
    ]


def test_the_editor_is_a_safety_net_at_a_share_of_the_given_window() -> None:
    stack = recommended_middleware("openai", context_window=200_000, loop_guard=True)
    assert [type(m) for m in stack] == [
        ToolOutputShorteningMiddleware,
        ContextEditorMiddleware,
        LoopGuardMiddleware,
    ]
    editor = stack[1]
    assert editor.config.trigger_tokens == int(200_000 * SAFETY_NET_SHARE) < 200_000
    assert editor.config.mode == "plain" and editor.config.pricing.name == "openai"
    custom = CachePricing("mine", cached_read=0.25, uncached=1.0)
    assert recommended_middleware(custom, context_window=8_000)[1].config.pricing is custom
    with pytest.raises(ValueError, match="context_window"):
        recommended_middleware(context_window=0)


def test_unknown_provider_is_rejected() -> None:
    with pytest.raises(ValueError, match="provider must be one of"):
        recommended_middleware("gemini")  # type: ignore[arg-type]


@tool
def run(command: str) -> str:
    """Run a shell command."""
    return "\n".join(f"line {i}: ok" for i in range(400)) + "\nFAILED test_app.py::test_x - boom"


def test_the_one_line_install_runs_an_agent() -> None:
    script = "\n".join(f"print({i})" for i in range(60))
    responses: list[Any] = [
        AIMessage(
            "", id="a1", tool_calls=[{"id": "c1", "name": "run", "args": {"command": script}}]
        ),
        AIMessage("done", id="a2"),
    ]
    agent, model = coding_agent(responses, tools=[run], middleware=recommended_middleware("openai"))
    result = agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t"}})
    assert result["messages"][-1].content == "done"
    second = model.calls[1].messages
    sent_call = next(m for m in second if isinstance(m, AIMessage)).tool_calls[0]
    assert len(sent_call["args"]["command"]) < len(script)
    assert "FAILED test_app.py::test_x - boom" in second[-1].content
    # a coding agent's long system prompt: the tool is listed from the first call on
    assert all(
        {t["function"]["name"] for t in c.tools} == {"run", "read_original"} for c in model.calls
    )


@needs_shared
@needs_vocab
def test_replay_of_a_real_trajectory_is_cache_safe_and_cheaper() -> None:
    # a Codex Desktop run: its long system prompt lists read_original from the first call
    path = next(p for p in trajectory_paths() if "codex_mise_019f53a5-842d" in p.name)
    trajectory = load_trajectory(path)
    measurer = PromptMeasurer(TiktokenCounter("o200k_base"))
    base = measure_replay(trajectory, replay(trajectory), measurer, strategy="none")
    stack = measure_replay(
        trajectory, replay(trajectory, recommended_middleware()), measurer, strategy="rec"
    )
    assert stack.prefix_breaks == 0  # nothing already sent changes, the tool list included
    assert stack.billed_anthropic < 0.9 * base.billed_anthropic
    assert stack.recall >= 0.9


def test_a_run_polling_a_running_cell_makes_every_call() -> None:
    """A Codex Desktop run waits on a cell still running five times in a row ("Script running
    with cell ID 18"): polling, not a loop, so the stack's loop guard lets every call through
    (it used to end the run at the fourth wait, after 10 of its 32 calls)."""
    path = TRAJECTORIES / "codex_desktop_0144" / "codex_hk_019f5cfd-b70b_ep2.json"
    skip_unless_here(path)
    trajectory = load_trajectory(path)
    stack = recommended_middleware(loop_guard=True)
    calls = len(replay(trajectory, stack).calls)
    assert calls == len(replay(trajectory).calls) == 32
    guard = stack[-1]
    assert isinstance(guard, LoopGuardMiddleware) and guard.stats.events == ()
    assert guard.stats.checks > 0 and guard.stats.errors == 0
