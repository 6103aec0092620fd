"""Between LangChain messages and the neutral transcript view.

:func:`to_view` reads ``BaseMessage`` objects into :class:`~tokenlean.transcript.Message`;
:func:`apply_edits` writes :class:`~tokenlean.transcript.Edit` objects back with
``model_copy`` so that every field an edit does not name (``name``, ``status``, ``artifact``,
``additional_kwargs``, ``response_metadata``, ``usage_metadata``, tool calls, ids) survives.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from tokenlean.transcript import Content, Edit, Message, Role, ToolCall

_ROLE_BY_TYPE: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "human": "user",
    "ai": "assistant",
    "tool": "tool",
}


def role_of(message: BaseMessage) -> Role:
    """The neutral role of a LangChain message (unknown types read as user text)."""
    return _ROLE_BY_TYPE.get(message.type, "user")


def _content(raw: object) -> Content:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        return tuple(
            block if isinstance(block, Mapping) else {"type": "text", "text": str(block)}
            for block in raw
        )
    return str(raw)


def message_to_view(message: BaseMessage) -> Message:
    """One LangChain message as a neutral :class:`Message`."""
    role = role_of(message)
    calls: tuple[ToolCall, ...] = ()
    if isinstance(message, AIMessage):
        calls = tuple(
            ToolCall(id=str(call.get("id") or ""), name=call["name"], args=call.get("args") or {})
            for call in message.tool_calls
        )
    status: Literal["success", "error"] | None = None
    tool_call_id = None
    if isinstance(message, ToolMessage):
        status = "error" if message.status == "error" else "success"
        tool_call_id = message.tool_call_id
    return Message(
        role=role,
        content=_content(message.content),
        id=message.id,
        name=message.name,
        tool_calls=calls,
        tool_call_id=tool_call_id,
        status=status,
    )


def to_view(messages: Iterable[BaseMessage]) -> list[Message]:
    """A whole LangChain message list as neutral messages, in order."""
    return [message_to_view(m) for m in messages]


def view_to_message(message: Message) -> BaseMessage:
    """Build a LangChain message from a neutral one (used when loading recorded traces)."""
    content: Any = message.content if isinstance(message.content, str) else list(message.content)
    if message.role == "system":
        return SystemMessage(content=content, id=message.id)
    if message.role == "user":
        return HumanMessage(content=content, id=message.id, name=message.name)
    if message.role == "assistant":
        return AIMessage(
            content=content,
            id=message.id,
            tool_calls=[
                {"id": c.id, "name": c.name, "args": dict(c.args), "type": "tool_call"}
                for c in message.tool_calls
            ],
        )
    return ToolMessage(
        content=content,
        id=message.id,
        name=message.name,
        tool_call_id=message.tool_call_id or "",
        status=message.status or "success",
    )


def replace_content(message: BaseMessage, content: Content) -> BaseMessage:
    """A copy of ``message`` with new content and every other field kept."""
    new: Any = content if isinstance(content, str) else [dict(block) for block in content]
    return message.model_copy(update={"content": new})


def apply_edits(messages: Sequence[BaseMessage], edits: Iterable[Edit]) -> list[BaseMessage]:
    """Apply edits by message id (or, for id-less messages, by index); never mutates inputs.

    An edit whose target is missing, or whose index no longer holds a message with the same id,
    is ignored rather than applied to the wrong message.
    """
    result = list(messages)
    position = {m.id: i for i, m in enumerate(result) if m.id is not None}
    for edit in edits:
        if edit.message_id is not None:
            index = position.get(edit.message_id)
        elif 0 <= edit.index < len(result) and result[edit.index].id is None:
            index = edit.index
        else:
            index = None
        if index is not None:
            result[index] = replace_content(result[index], edit.new_content)
    return result
