"""A scripted AgentScope agent (needs the ``agentscope`` extra): no network, no mocks.

- :class:`ScriptedChatModel` is a real ``ChatModelBase``: each call formats the messages it is
  given with a real AgentScope formatter (Anthropic's by default), records the request as the
  provider would receive it (:class:`AgentScopeCall`: the formatted messages, the tool schemas,
  the tool choice), and answers with the next scripted turn;
- :class:`RecordedTool` is a real tool that answers each call with the next recorded output;
- :func:`scripted_agent` builds a real ``Agent`` around them, with the runtime-state injection
  (clock hints) off and no context compression, so a test sees only what its middleware does;
- :func:`replay_messages` replays a recorded run (neutral messages) through such an agent, one
  reply per user turn, cut as the LangChain replay cuts it;
- :func:`prefix_breaks` says which calls changed bytes an earlier call had sent.

::

    agent, model = scripted_agent([turn(calls=[("c1", "bash", {"cmd": "ls"})]), turn("done")],
                                  tools=[RecordedTool("bash", ["a\\nb"])],
                                  middlewares=recommended_middleware())
    await agent.reply(UserMsg("user", "go"))
    assert prefix_breaks(model) == []

The model, the tool and the agent are :mod:`tokenlean.replay._agentscope_agent`'s.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from agentscope.agent import Agent
from agentscope.formatter import FormatterBase
from agentscope.message import Msg, TextBlock, UserMsg
from agentscope.middleware import MiddlewareBase

from tokenlean.replay._agentscope_agent import (
    AgentScopeCall,
    RecordedTool,
    ScriptedChatModel,
    Turn,
    scripted_agent,
    turn,
)
from tokenlean.replay._formats import Trajectory
from tokenlean.replay._raw import CallPrompt
from tokenlean.replay._script import arg_types, split_segments
from tokenlean.transcript import Message

__all__ = [
    "AgentScopeCall",
    "RecordedTool",
    "ScriptedChatModel",
    "Turn",
    "call_prompts",
    "prefix_breaks",
    "replay_messages",
    "scripted_agent",
    "turn",
]


async def replay_messages(
    messages: Sequence[Message],
    middlewares: Sequence[MiddlewareBase] = (),
    *,
    formatter: FormatterBase | None = None,
) -> tuple[Agent, ScriptedChatModel]:
    """Replay a recorded run (neutral messages, as :func:`tokenlean.replay.load_trajectory`
    reads them) through a scripted agent: the opening system message is the system prompt,
    each segment (:func:`~tokenlean.replay._script.split_segments`) is one reply, each
    assistant message a scripted turn (tagged with its index among the run's assistant
    messages), each tool message the result of the call it answers.
    A reply the middleware ends early drops its unused turns, as the LangChain replay does."""
    system, segments = split_segments(messages)
    model = ScriptedChatModel(formatter=formatter)
    agent, _ = scripted_agent(
        tools=_recorded_tools(messages),
        middlewares=middlewares,
        system_prompt=system or "You are a helpful agent.",
        model=model,
    )
    index = 0
    for segment in segments:
        model.push(*(replace(_turn_of(m), tag=index + i) for i, m in enumerate(segment.turns)))
        index += len(segment.turns)
        inputs = [_opening(m) for m in segment.inputs]
        await agent.reply(inputs or [UserMsg("user", "(continue)")])
        model.clear_pending()
    return agent, model


def _opening(message: Message) -> Msg:
    """A recorded user message as the agent is given it. An ``Agent`` takes its system prompt
    only when it is built and refuses a system message as input, so a system message recorded
    mid-run (a Codex developer message) is given the way AgentScope takes input: a user
    message carrying its text, its sender named ``system``."""
    name = "system" if message.role == "system" else "user"
    return Msg(name=name, role="user", content=[TextBlock(text=message.text or "(empty)")])


def _turn_of(message: Message) -> Turn:
    return turn(message.text, calls=[(c.id, c.name, c.args) for c in message.tool_calls])


def _recorded_tools(messages: Sequence[Message]) -> list[RecordedTool]:
    """One tool per name called, answering its calls in call order with their recorded results
    (a call with no recorded result gets an empty one)."""
    results = {m.tool_call_id: m.text for m in messages if m.role == "tool" and m.tool_call_id}
    outputs: dict[str, list[str]] = defaultdict(list)
    for message in messages:
        for call in message.tool_calls:
            outputs[call.name].append(results.get(call.id, ""))
    types = arg_types(messages)
    return [
        RecordedTool(name, texts, input_schema=_schema(types.get(name, {})))
        for name, texts in sorted(outputs.items())
    ]


def _schema(keys: Mapping[str, set[type]]) -> dict[str, Any]:
    """The schema the LangChain replay's tool sends for these arguments (optional, a string
    or null when every value was a string, else anything), so the two replays bill alike."""
    text = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    properties = {
        k: dict(text) if t == {str} else {"default": None} for k, t in sorted(keys.items())
    }
    return {"properties": properties, "type": "object"}


# -- cache safety ------------------------------------------------------------------------------


def _blocks(call: AgentScopeCall) -> list[str]:
    """The request as the provider caches it: the tools, then each content block of each
    message with its role, as canonical JSON (a message whose content only grew, as a
    formatter merging a new hint into the last user message makes it, keeps its prefix)."""
    out = [json.dumps(list(call.tools), sort_keys=True, ensure_ascii=False)]
    for m in call.messages:
        content = m.get("content")
        parts = content if isinstance(content, list) else [content]
        out += [_canonical({"role": m.get("role"), "block": p}) for p in parts]
    return out


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def prefix_breaks(calls: ScriptedChatModel | Sequence[AgentScopeCall]) -> list[tuple[int, int]]:
    """``(call, first changed block)`` for each call that did not re-send the previous call's
    tools and messages byte for byte before adding its own (block 0 is the tool list)."""
    recorded = calls.calls if isinstance(calls, ScriptedChatModel) else list(calls)
    breaks: list[tuple[int, int]] = []
    for i in range(1, len(recorded)):
        before, now = _blocks(recorded[i - 1]), _blocks(recorded[i])
        for j, block in enumerate(before):
            if j >= len(now) or now[j] != block:
                breaks.append((i, j))
                break
    return breaks


def call_prompts(
    trajectory: Trajectory, middlewares: Sequence[MiddlewareBase] = ()
) -> list[CallPrompt]:
    """:func:`replay_messages` on ``trajectory`` as the replay measures a way in: each call's
    prompt, tool schemas and the recorded turn that answered it."""
    _, model = asyncio.run(replay_messages(trajectory.messages, middlewares))
    return [
        CallPrompt(
            tuple(dict(t) for t in c.tools),
            c.view(),
            c.answer.tag if c.scripted and c.answer and isinstance(c.answer.tag, int) else None,
        )
        for c in model.calls
    ]
