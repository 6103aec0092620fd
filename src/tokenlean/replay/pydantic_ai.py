"""A recorded run replayed through a real pydantic-ai ``Agent`` (needs the ``pydantic-ai`` extra).

The pydantic-ai counterpart of the LangChain replay (:mod:`tokenlean.replay`): a
``FunctionModel`` answers each model request with the next recorded assistant turn (same
tool-call ids) and records what it was sent, after the agent's history processors; one tool per
recorded tool name returns the recorded result of its call id; each user turn of the recording
is a new ``run_sync`` on the history the agent kept. Tests and ``benchmarks/adapters.py`` share
it::

    calls = replay_agent(trajectory.messages, processor=history_processor())
    for call in calls:          # what the model saw, in the neutral view
        call.messages, call.tools, call.turn

It mirrors the LangChain replay where a recording and an agent disagree: a run ends at a turn
with no tool call (turns recorded after it in the same user turn are dropped), and a request the
recording has no turn for gets an unscripted final answer (``turn`` is ``None``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import version
from typing import Any

from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import UsageLimits

from tokenlean.pydantic_ai import to_view
from tokenlean.replay._engine import build_replay_tools
from tokenlean.replay._formats import Trajectory
from tokenlean.replay._raw import CallPrompt
from tokenlean.transcript import Message

__all__ = ["AT", "PydanticCall", "call_prompts", "make_agent", "replay_agent", "to_pydantic"]

#: The timestamp of every recorded part (the model never reads it; fixed, so bytes repeat).
AT = datetime(2026, 1, 1, tzinfo=timezone.utc)
PYDANTIC_AI_MAJOR = int(version("pydantic-ai-slim").split(".")[0])
#: What an unscripted (or empty recorded) turn answers: pydantic-ai retries an empty text.
_END = " "

Processor = Callable[[list[ModelMessage]], list[ModelMessage]]


def make_agent(
    model: FunctionModel,
    processor: Processor | None = None,
    tools: Sequence[Any] = (),
    *,
    system_prompt: str = "",
) -> Agent[None, str]:
    """A real agent with ``processor`` wired the way the installed pydantic-ai takes it (and its
    ``tool``, when it has one, given from the first call on), and ``system_prompt`` if any."""
    extra = getattr(processor, "tool", None)
    every = [*tools, *([extra] if extra is not None else [])]
    system = (system_prompt,) if system_prompt else ()
    if processor is None:
        return Agent(model, tools=every, system_prompt=system)
    if PYDANTIC_AI_MAJOR < 2:  # the 1.x way (late 1.x releases turn it into a capability)
        return Agent(model, tools=every, system_prompt=system, history_processors=[processor])  # type: ignore[call-overload, no-any-return, unused-ignore]  # 1.x
    from pydantic_ai.capabilities import ProcessHistory

    return Agent(model, tools=every, system_prompt=system, capabilities=[ProcessHistory(processor)])


def to_pydantic(messages: Sequence[Message]) -> list[ModelMessage]:
    """A neutral trajectory as pydantic-ai messages: consecutive non-assistant messages make
    one request, each assistant message one response."""
    out: list[ModelMessage] = []
    parts: list[Any] = []
    for m in messages:
        if m.role == "assistant":
            if parts:
                out.append(ModelRequest(parts=parts))
                parts = []
            out.append(_response(m))
        elif m.role == "tool":
            name, call_id = m.name or "tool", m.tool_call_id or ""
            parts.append(ToolReturnPart(name, m.text, tool_call_id=call_id, timestamp=AT))
        elif m.role == "system":
            parts.append(SystemPromptPart(m.text, timestamp=AT))
        else:
            parts.append(UserPromptPart(m.text, timestamp=AT))
    if parts:
        out.append(ModelRequest(parts=parts))
    return out


def _response(m: Message, empty: str = "") -> ModelResponse:
    calls = [ToolCallPart(c.name, dict(c.args), tool_call_id=c.id) for c in m.tool_calls]
    text = m.text or (empty if not calls else "")
    return ModelResponse(parts=[*([TextPart(text)] if text else []), *calls], timestamp=AT)


@dataclass(frozen=True, slots=True)
class PydanticCall:
    """One model request as the model received it: the history in the neutral view (after the
    processors), the tool definitions, and which recorded assistant turn (its index among the
    recording's assistant turns) answered it, ``None`` for an unscripted answer."""

    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...]
    turn: int | None


class _Script:
    """The ``FunctionModel`` function: answers with queued recorded turns, records each call."""

    def __init__(self) -> None:
        self.queue: list[tuple[int, ModelResponse]] = []
        self.calls: list[PydanticCall] = []

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn, reply = self.queue.pop(0) if self.queue else (None, _final())
        seen = to_view(messages).messages
        self.calls.append(PydanticCall(seen, tuple(info.function_tools), turn))
        return reply


def _final() -> ModelResponse:
    return ModelResponse(parts=[TextPart(_END)], timestamp=AT)


def replay_agent(
    messages: Sequence[Message],
    *,
    processor: Processor | None = None,
    schemas: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[PydanticCall]:
    """Every model request of the recorded run ``messages`` replayed through a real agent with
    ``processor`` (none: pydantic-ai as is). ``schemas`` gives a tool's JSON schema by name
    (default: an object of the argument names the recording uses)."""
    script = _Script()
    agent = make_agent(FunctionModel(script.respond), processor, _tools(messages, schemas or {}))
    history: list[ModelMessage] = []
    turns = 0
    for request, replies in _user_turns(messages):
        script.queue = [(turns + k, reply) for k, reply in enumerate(replies)]
        turns += len(replies)
        result = agent.run_sync(
            None,
            message_history=[*history, request],
            usage_limits=UsageLimits(request_limit=None),
        )
        script.queue.clear()  # turns left when the run ended early (a turn with no tool call)
        history = result.all_messages()
    return script.calls


def _user_turns(messages: Sequence[Message]) -> list[tuple[ModelRequest, list[ModelResponse]]]:
    """Each user turn: the request that opens it (its system and user messages; tool results
    are the tools' to return) and the recorded responses that answer it. Assistant turns
    recorded before any user message have no request to answer (none of the shared runs has
    one)."""
    turns: list[tuple[list[Any], list[ModelResponse]]] = []
    for m in messages:
        if m.role == "assistant":
            if turns:
                turns[-1][1].append(_response(m, empty=_END))
        elif m.role != "tool":
            if not turns or turns[-1][1]:
                turns.append(([], []))
            system = m.role == "system"
            kind = SystemPromptPart if system else UserPromptPart
            turns[-1][0].append(kind(m.text, timestamp=AT))
    return [(ModelRequest(parts=parts), replies) for parts, replies in turns]


def _tools(
    messages: Sequence[Message], schemas: Mapping[str, Mapping[str, Any]]
) -> list[Tool[None]]:
    results = {m.tool_call_id: m.text for m in messages if m.role == "tool" and m.tool_call_id}
    keys: dict[str, set[str]] = {}
    for m in messages:
        for call in m.tool_calls:
            keys.setdefault(call.name, set()).update(call.args)

    def run(ctx: RunContext[None], **_: Any) -> str:
        return results.get(ctx.tool_call_id or "", "")

    return [
        Tool.from_schema(
            run,
            name=name,
            description=f"Recorded `{name}` tool.",
            json_schema=dict(schemas.get(name) or _schema(names)),
            takes_ctx=True,
            sequential=True,  # results come back in call order, as recorded
        )
        for name, names in sorted(keys.items())
    ]


def _schema(names: set[str]) -> dict[str, Any]:
    properties: dict[str, Any] = {name: {} for name in sorted(names)}
    return {"type": "object", "properties": properties, "additionalProperties": True}


def call_prompts(trajectory: Trajectory, processor: Processor | None = None) -> list[CallPrompt]:
    """:func:`replay_agent` on ``trajectory`` as the replay measures a way in: each call's
    prompt, its tools as LangChain binds them (the recorded tools given the schemas the
    LangChain replay gives them, so both send the same tool list) and its recorded turn."""
    schemas = {
        t["function"]["name"]: t["function"]["parameters"]
        for t in map(convert_to_openai_tool, build_replay_tools(trajectory.messages))
    }
    calls = replay_agent(trajectory.messages, processor=processor, schemas=schemas)
    return [CallPrompt(tuple(_bound(t) for t in c.tools), c.messages, c.turn) for c in calls]


def _bound(definition: ToolDefinition) -> dict[str, Any]:
    """A pydantic-ai tool definition as LangChain binds a tool."""
    function = {
        "name": definition.name,
        "description": definition.description,
        "parameters": definition.parameters_json_schema,
    }
    return {"type": "function", "function": function}
