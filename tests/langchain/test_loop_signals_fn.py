"""``tokenlean.loop_signals`` plugged straight into TokenSavingMiddleware as its signals_fn."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from tokenlean import loop_signals
from tokenlean.langchain import TokenSavingMiddleware
from tokenlean.testing import scripted_agent


@tool
def sh(command: str) -> str:
    """Run a shell command."""
    return "cat: notes.txt: No such file or directory" if "notes" in command else f"ran {command}"


def call(command: str, i: int) -> AIMessage:
    return AIMessage(
        content="",
        id=f"ai-{i}",
        tool_calls=[{"id": f"c{i}", "name": "sh", "args": {"command": command}}],
    )


def run(commands: list[str]) -> tuple[TokenSavingMiddleware, list[int]]:
    middleware = TokenSavingMiddleware(signals_fn=loop_signals, early_exit_min_call_index=0)
    responses = [call(c, i) for i, c in enumerate(commands)]
    agent, model = scripted_agent(responses, tools=[sh], middleware=[middleware])
    agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "s"}})
    nudged = [
        i
        for i, c in enumerate(model.calls)
        if any(m.type == "human" and m.text != "go" for m in c.messages)
    ]
    return middleware, nudged


def test_a_loop_triggers_the_reference_early_exit() -> None:
    middleware, nudged = run(["ls"] + ["cat notes.txt"] * 5)
    assert middleware.stats.early_exits == 1
    assert nudged[0] == 4  # after the third identical failing read: streak 0.75 > 0.7


def test_progress_never_triggers_it() -> None:
    middleware, nudged = run([f"pytest -k case{i}" for i in range(8)])
    assert middleware.stats.early_exits == 0 and nudged == []
