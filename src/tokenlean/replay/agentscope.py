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
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentscope.agent import Agent, InjectionConfig, ReActConfig
from agentscope.credential import CredentialBase
from agentscope.formatter import AnthropicChatFormatter, FormatterBase
from agentscope.message import Msg, TextBlock, ToolCallBlock, UserMsg
from agentscope.middleware import MiddlewareBase
from agentscope.model import ChatModelBase, ChatResponse, ChatUsage
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import ToolBase, ToolChoice, ToolChunk, Toolkit
from pydantic import BaseModel

from tokenlean.replay._formats import Trajectory
from tokenlean.replay._raw import CallPrompt
from tokenlean.replay._script import Queued, arg_types, split_segments
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

#: Large enough that AgentScope never compresses a replayed context.
_CONTEXT_SIZE = 10**12


@dataclass(frozen=True, slots=True)
class Turn:
    """One scripted answer: its content blocks and the usage the model reports for it."""

    content: tuple[Any, ...]
    usage: ChatUsage | None = None
    tag: object = None  # the caller's own mark (the replay: the recorded turn's index)


def turn(
    text: str = "",
    *,
    calls: Sequence[tuple[str, str, Mapping[str, Any]]] = (),
    usage: tuple[int, int] | tuple[int, int, int, int] | None = None,
) -> Turn:
    """A :class:`Turn` saying ``text`` and making ``calls`` (``(id, name, args)`` each);
    ``usage`` is ``(input, output)`` or ``(input, output, cache_read, cache_write)``."""
    blocks: list[Any] = [TextBlock(text=text)] if text else []
    blocks += [
        ToolCallBlock(id=i, name=n, input=json.dumps(dict(a), ensure_ascii=False))
        for i, n, a in calls
    ]
    if usage is None:
        return Turn(tuple(blocks))
    read, write = (usage[2], usage[3]) if len(usage) == 4 else (0, 0)
    chat = ChatUsage(
        input_tokens=usage[0],
        output_tokens=usage[1],
        time=0.0,
        cache_input_tokens=read,
        cache_creation_input_tokens=write,
    )
    return Turn(tuple(blocks), chat)


@dataclass(frozen=True, slots=True)
class AgentScopeCall:
    """One request as the model received it: the formatted messages (system first), the tool
    schemas as the agent passed them, and the tool choice (``None``: the default)."""

    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...]
    tool_choice: ToolChoice | None
    inputs: tuple[Msg, ...] = ()  # the messages before formatting (system first)
    scripted: bool = True  # False: no turn was left, answered with an empty final answer
    answer: Turn | None = None

    def view(self) -> tuple[Message, ...]:
        """The messages as the neutral view reads them (what the planners saw)."""
        from tokenlean.agentscope import to_view

        return to_view(self.inputs).messages

    def tool_names(self) -> list[str]:
        return [str(t.get("function", t).get("name", "")) for t in self.tools]


class _Offline(CredentialBase):
    """A credential for a model that never leaves the process."""

    @classmethod
    def get_chat_model_class(cls) -> type[ChatModelBase]:
        return ScriptedChatModel


class ScriptedChatModel(Queued[Turn], ChatModelBase):
    """A chat model that answers with the scripted turns, in order, recording every request;
    with none left, an empty final answer (a call marked not ``scripted``)."""

    class Parameters(BaseModel):
        """A scripted model takes no parameters."""

    def __init__(
        self,
        turns: Iterable[Turn] = (),
        *,
        formatter: FormatterBase | None = None,
        model: str = "scripted",
    ) -> None:
        super().__init__(
            _Offline(),
            model,
            self.Parameters(),
            stream=False,
            max_retries=0,
            context_size=_CONTEXT_SIZE,
        )
        self.formatter = formatter or AnthropicChatFormatter()
        self._turns: deque[Turn] = deque(turns)
        self.calls: list[AgentScopeCall] = []

    def _replies(self) -> deque[Turn]:
        return self._turns

    async def _call_api(
        self,
        model_name: str,
        messages: list[Msg],
        tools: list[dict[str, Any]] | None = None,
        tool_choice: ToolChoice | None = None,
        **kwargs: Any,
    ) -> ChatResponse:
        formatted = await self.formatter.format(messages)
        scripted = bool(self._turns)
        answer = self._turns.popleft() if scripted else Turn((TextBlock(text=""),))
        inputs = tuple(m.model_copy(deep=True) for m in messages)  # memory changes later
        record = AgentScopeCall(
            tuple(formatted), tuple(tools or ()), tool_choice, inputs, scripted, answer
        )
        self.calls.append(record)
        return ChatResponse(content=list(answer.content), is_last=True, usage=answer.usage)


class RecordedTool(ToolBase):
    """A tool that answers its calls, in order, with ``outputs`` (any arguments accepted)."""

    is_concurrency_safe = False
    is_read_only = True

    def __init__(
        self,
        name: str,
        outputs: Iterable[str] = (),
        *,
        description: str = "",
        input_schema: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.name = name
        self.description = description or f"Recorded `{name}` tool."
        self.input_schema = dict(input_schema or {"type": "object", "properties": {}})
        self._outputs: deque[str] = deque(outputs)

    def push(self, *outputs: str) -> None:
        self._outputs.extend(outputs)

    async def call(self, **kwargs: Any) -> ToolChunk:
        text = self._outputs.popleft() if self._outputs else "(no recorded output)"
        return ToolChunk(content=[TextBlock(text=text)])

    async def check_permissions(self, tool_input: dict[str, Any], context: Any) -> Any:
        return PermissionDecision(behavior=PermissionBehavior.ALLOW, message="recorded")


def scripted_agent(
    turns: Iterable[Turn] = (),
    *,
    tools: Sequence[ToolBase] = (),
    middlewares: Sequence[MiddlewareBase] = (),
    system_prompt: str = "You are a helpful agent.",
    model: ScriptedChatModel | None = None,
    max_iters: int = 10_000,
) -> tuple[Agent, ScriptedChatModel]:
    """A real AgentScope ``Agent`` around a :class:`ScriptedChatModel` (module docstring)."""
    model = model or ScriptedChatModel(turns)
    agent = Agent(
        name="agent",
        system_prompt=system_prompt,
        model=model,
        toolkit=Toolkit(tools=list(tools)),
        middlewares=list(middlewares),
        react_config=ReActConfig(max_iters=max_iters),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    return agent, model


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
