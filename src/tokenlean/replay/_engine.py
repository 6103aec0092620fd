"""Replay a recorded trajectory call by call through a real ``create_agent`` graph.

The scripted model replays the recorded assistant turns (same ids, same tool calls) and records
what it was sent; replay tools return the recorded outputs; each new user turn is a new
``invoke`` on the same checkpointed thread. Each prompt is measured as the model receives it
(:func:`replay_measured`), so a run holds its calls' figures, not a copy of every prompt: memory
grows with a session's length, not with its square.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from pydantic import Field, create_model

from tokenlean.langchain import ViewCache, from_view, to_view
from tokenlean.replay._formats import Trajectory
from tokenlean.replay._metrics import CallMeter, CallMetrics, PromptMeasurer, RunMetrics
from tokenlean.replay._refs import learned_references
from tokenlean.replay._saver import LatestSaver
from tokenlean.replay._script import arg_types, split_segments
from tokenlean.replay._scripted import RecordedCall, ScriptedChatModel
from tokenlean.replay._timing import Stopwatch, timed
from tokenlean.tokens import tool_schema_text
from tokenlean.transcript import Message

__all__ = [
    "LatestSaver",
    "Replay",
    "build_replay_tools",
    "measure_replay",
    "replay",
    "replay_measured",
    "split_segments",
    "turn_messages",
]


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


def replay(
    trajectory: Trajectory,
    middleware: Sequence[Any] = (),
    *,
    on_call: Callable[[RecordedCall], None] | None = None,
) -> Replay:
    """Run ``trajectory`` through a real agent with ``middleware``; raises what the agent raises.

    With ``on_call``, each call is handed to it as the model answers it and the calls are kept
    without their messages (``on_call`` measured them)."""
    system, segments = split_segments(trajectory.messages)
    model = ScriptedChatModel(on_call=on_call, keep_messages=on_call is None)
    watch = Stopwatch()
    agent: Any = create_agent(
        model,
        tools=build_replay_tools(trajectory.messages),
        system_prompt=system,
        middleware=[timed(m, watch) for m in middleware],
        checkpointer=LatestSaver(),
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
        # saved once per user turn: the next one resumes from there, nothing reads the steps
        state = agent.invoke({"messages": inputs}, config, durability="exit")
        model.clear_pending()  # turns left when middleware ended this user turn early
    wall = time.perf_counter() - start
    return Replay(model.calls, watch.seconds, wall, list(state.get("messages", [])))


def replay_measured(
    trajectory: Trajectory,
    middleware: Sequence[Any],
    measurer: PromptMeasurer,
    *,
    strategy: str,
) -> RunMetrics:
    """:func:`replay` then :func:`measure_replay` in one pass, each call measured as it comes
    (the same figures, without holding every prompt)."""
    meter = _ReplayMeter(trajectory, measurer)
    return meter.run(replay(trajectory, middleware, on_call=meter.call), strategy)


def measure_replay(
    trajectory: Trajectory,
    result: Replay,
    measurer: PromptMeasurer,
    *,
    strategy: str,
) -> RunMetrics:
    """The metrics of one replay (scripted calls only; synthetic extra calls are left out)."""
    meter = _ReplayMeter(trajectory, measurer)
    for call in result.calls:
        meter.call(call)
    return meter.run(result, strategy)


class _ReplayMeter:
    """Measures a replay's scripted calls one by one, keeping only their figures."""

    def __init__(self, trajectory: Trajectory, measurer: PromptMeasurer) -> None:
        self.trajectory = trajectory
        self.measurer = measurer
        self.views = ViewCache()  # the calls share most of their messages: each converted once
        self.meter = CallMeter()
        self.calls: list[CallMetrics] = []
        learned = learned_references(trajectory.messages)  # one per assistant turn, in order
        ids = [ai.id for ai in turn_messages(trajectory.messages)]
        self.refs = {i: turn.refs for i, turn in zip(ids, learned, strict=True)}
        self.outputs = dict(zip(ids, measurer.outputs(trajectory.messages), strict=True))

    def call(self, call: RecordedCall) -> None:
        if not call.scripted:
            return
        views = to_view(call.messages, cache=self.views)
        prompt = self.measurer.measure(tool_schema_text(call.tools), views)
        answered = call.response.id if call.response else None
        refs = self.refs.get(answered, frozenset())
        self.calls.append(self.meter.add(prompt, refs, self.outputs.get(answered, 0)))

    def run(self, result: Replay, strategy: str) -> RunMetrics:
        trajectory = self.trajectory
        run = RunMetrics(strategy=strategy, trajectory=trajectory.id, source=trajectory.source_name)
        run.add_calls(self.calls)
        run.middleware_seconds = result.middleware_seconds
        run.wall_seconds = result.wall_seconds
        run.extra_calls = sum(not c.scripted for c in result.calls)
        return run
