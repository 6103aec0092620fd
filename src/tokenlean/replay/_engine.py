"""Replay a recorded trajectory call by call through a real ``create_agent`` graph.

The scripted model replays the recorded assistant turns (same ids, same tool calls) and records
what it was sent; replay tools return the recorded outputs; each new user turn is a new
``invoke`` on the same checkpointed thread. The recorded prompts are then measured.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field, create_model

from tokenlean.langchain import ViewCache, from_view, to_view
from tokenlean.replay._formats import Trajectory
from tokenlean.replay._metrics import PromptMeasurer, RunMetrics, measure_calls
from tokenlean.replay._refs import learned_references
from tokenlean.replay._script import arg_types, split_segments
from tokenlean.replay._scripted import RecordedCall, ScriptedChatModel
from tokenlean.replay._timing import Stopwatch, timed
from tokenlean.tokens import tool_schema_text
from tokenlean.transcript import Message


@dataclass
class Replay:
    """What a replay produced: the model's recorded calls and the middleware time."""

    calls: list[RecordedCall]
    middleware_seconds: float
    wall_seconds: float
    final_messages: list[BaseMessage]


def turn_messages(messages: Sequence[Message]) -> list[AIMessage]:
    """The recorded assistant turns as ``AIMessage`` objects with unique ids.

    A recorded id is kept; a missing or repeated one becomes ``ai-N`` (N counts assistant
    turns), since LangGraph's reducer would otherwise merge two turns into one.
    """
    seen: set[str] = set()
    out: list[AIMessage] = []
    for message in messages:
        if message.role != "assistant":
            continue
        ai = from_view([message])[0]
        if not ai.id or ai.id in seen:
            ai = ai.model_copy(update={"id": f"ai-{len(out)}"})
        seen.add(str(ai.id))
        out.append(ai)  # type: ignore[arg-type]  # built from an assistant message
    return out


def build_replay_tools(messages: Sequence[Message]) -> list[BaseTool]:
    """One tool per recorded tool name; each returns the recorded result of its call id."""
    results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    return [_replay_tool(name, keys, results) for name, keys in sorted(arg_types(messages).items())]


def _replay_tool(
    name: str, keys: dict[str, set[type]], results: dict[str, Message]
) -> StructuredTool:
    fields: dict[str, Any] = {
        key: ((str | None) if types == {str} else Any, Field(default=None))
        for key, types in sorted(keys.items())
    }
    fields["tool_call_id"] = (Annotated[str, InjectedToolCallId], ...)
    schema = create_model(f"{name}_args", __config__={"extra": "allow"}, **fields)

    def run(tool_call_id: str, **_: Any) -> ToolMessage:
        recorded = results.get(tool_call_id)
        if recorded is None:
            return ToolMessage(content="", tool_call_id=tool_call_id, name=name)
        out = from_view([recorded])[0]
        return out.model_copy(  # type: ignore[return-value]  # a tool message stays one
            update={"id": recorded.id or f"tool-{tool_call_id}", "name": recorded.name or name}
        )

    return StructuredTool.from_function(
        func=run, name=name, description=f"Recorded `{name}` tool.", args_schema=schema
    )


def replay(trajectory: Trajectory, middleware: Sequence[Any] = ()) -> Replay:
    """Run ``trajectory`` through a real agent with ``middleware``; raises what the agent raises."""
    system, segments = split_segments(trajectory.messages)
    model = ScriptedChatModel()
    watch = Stopwatch()
    agent: Any = create_agent(
        model,
        tools=build_replay_tools(trajectory.messages),
        system_prompt=system,
        middleware=[timed(m, watch) for m in middleware],
        checkpointer=InMemorySaver(),
    )
    config: Any = {
        "configurable": {"thread_id": trajectory.id},
        "recursion_limit": 100 + 10 * len(trajectory.messages),
    }
    state: dict[str, Any] = {"messages": []}
    turns = iter(turn_messages(trajectory.messages))
    start = time.perf_counter()
    for segment in segments:
        model.push(*(next(turns) for _ in segment.turns))
        inputs = from_view(segment.inputs)
        state = agent.invoke({"messages": inputs}, config)
        model.clear_pending()  # turns left when middleware ended this user turn early
    wall = time.perf_counter() - start
    return Replay(model.calls, watch.seconds, wall, list(state.get("messages", [])))


def measure_replay(
    trajectory: Trajectory,
    result: Replay,
    measurer: PromptMeasurer,
    *,
    strategy: str,
) -> RunMetrics:
    """The metrics of one replay (scripted calls only; synthetic extra calls are left out)."""
    scripted = [c for c in result.calls if c.scripted]
    views = ViewCache()  # the calls share most of their messages: each is converted once
    prompts = [
        measurer.measure(tool_schema_text(c.tools), to_view(c.messages, cache=views))
        for c in scripted
    ]
    learned = learned_references(trajectory.messages)  # one per assistant turn, in order
    ids = [ai.id for ai in turn_messages(trajectory.messages)]
    refs_by_id = {i: turn.refs for i, turn in zip(ids, learned, strict=True)}
    out_by_id = dict(zip(ids, measurer.outputs(trajectory.messages), strict=True))
    answered = [c.response.id if c.response else None for c in scripted]
    turn_refs = [refs_by_id.get(i, frozenset()) for i in answered]
    outputs = [out_by_id.get(i, 0) for i in answered]
    run = RunMetrics(strategy=strategy, trajectory=trajectory.id, source=trajectory.source_name)
    run.add_calls(measure_calls(prompts, turn_refs, outputs))
    run.middleware_seconds = result.middleware_seconds
    run.wall_seconds = result.wall_seconds
    run.extra_calls = len(result.calls) - len(scripted)
    return run
