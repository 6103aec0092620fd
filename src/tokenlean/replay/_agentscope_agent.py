"""The scripted pieces of an AgentScope agent (needs the ``agentscope`` extra): a real
``ChatModelBase`` that answers with scripted turns and records each request as the provider
would receive it, a real tool that answers with recorded outputs, and a real ``Agent`` around
them. :mod:`tokenlean.replay.agentscope` replays recorded runs through them."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentscope.agent import Agent, InjectionConfig, ReActConfig
from agentscope.credential import CredentialBase
from agentscope.formatter import AnthropicChatFormatter, FormatterBase
from agentscope.message import Msg, TextBlock, ToolCallBlock
from agentscope.middleware import MiddlewareBase
from agentscope.model import ChatModelBase, ChatResponse, ChatUsage
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import ToolBase, ToolChoice, ToolChunk, Toolkit
from pydantic import BaseModel

from tokenlean.replay._script import Queued
from tokenlean.transcript import Message

__all__ = [
    "AgentScopeCall",
    "RecordedTool",
    "ScriptedChatModel",
    "Turn",
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
