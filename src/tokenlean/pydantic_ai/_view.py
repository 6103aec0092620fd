"""Between pydantic-ai messages and the neutral transcript: the view, its addresses, the patch.

:func:`read` turns a pydantic-ai history into the neutral messages the planner reads, and for
each one the address of the pydantic-ai part it came from, so :func:`apply` can write each
edit back onto that very part with :func:`dataclasses.replace`: every field the edit does not
name (``tool_call_id``, timestamps, ``provider_details``, ``id``, usage) survives, and every
message and part no edit names is the same object as in the input.

What the view shows: a request's ``SystemPromptPart`` (system), ``UserPromptPart`` (user; a
prompt with images is not text-only, so nothing reads it as text) and ``ToolReturnPart`` (a
tool result, text-only when its content is a string); a response's ``TextPart`` and
``ToolCallPart`` as one assistant turn. Everything else (retry prompts, thinking, native tool
parts, files, parts newer than this adapter) is not in the view and is never touched.

The marks an edit records (:data:`~tokenlean.transcript.MARK_KEY`) go into the part's
``metadata`` (a tool return's) or the response's ``metadata``, which pydantic-ai never sends to
the model. pydantic-ai keeps what a history processor returns as the run's history, so the
processor sees its own output on the next request: the marks are how the planner knows those
parts are done (and they survive ``ModelMessagesTypeAdapter`` round trips).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

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

from tokenlean.transcript import MARK_KEY, Content, Edit, Message, ToolCall, merged_metadata

__all__ = ["PartView", "apply", "read", "writable"]

#: Tool outcomes pydantic-ai sends through the provider's error channel.
_ERRORS = frozenset({"failed", "retried"})
#: A block the planner never reads as text (an image, a file): the part is left alone.
_OTHER: tuple[Mapping[str, Any], ...] = ({"type": "other"},)


@dataclass(frozen=True, slots=True)
class PartView:
    """A history read as neutral messages; ``where[i]`` is the ``(message, part)`` position
    that ``messages[i]`` came from (``part`` is ``-1`` for an assistant turn: a response)."""

    messages: tuple[Message, ...]
    where: tuple[tuple[int, int], ...]


def read(history: Sequence[ModelMessage]) -> PartView:
    """The neutral view of ``history`` (see the module docstring for what it shows)."""
    messages: list[Message] = []
    where: list[tuple[int, int]] = []
    for i, message in enumerate(history):
        if isinstance(message, ModelResponse):
            messages.append(_turn(message))
            where.append((i, -1))
            continue
        if not isinstance(message, ModelRequest):
            continue
        for j, part in enumerate(message.parts):
            view = _request_part(part)
            if view is not None:
                messages.append(view)
                where.append((i, j))
    return PartView(tuple(messages), tuple(where))


def _request_part(part: object) -> Message | None:
    if isinstance(part, SystemPromptPart):
        return Message(role="system", content=part.content)
    if isinstance(part, UserPromptPart):
        content = part.content if isinstance(part.content, str) else _user_blocks(part.content)
        return Message(role="user", content=content)
    if isinstance(part, ToolReturnPart):
        return _result(part)
    return None


def _user_blocks(content: Sequence[object]) -> Content:
    """A prompt of several items: its strings as text blocks, anything else as a block the
    planner does not read as text."""
    return tuple({"type": "text", "text": c} if isinstance(c, str) else _OTHER[0] for c in content)


def _result(part: ToolReturnPart[Any]) -> Message:
    # Only a string is shortened: other content is sent as JSON or files, in provider-specific
    # shapes a rewrite to text would change.
    content: Content = part.content if isinstance(part.content, str) else _OTHER
    metadata = part.metadata if isinstance(part.metadata, Mapping) else {}
    return Message(
        role="tool",
        content=content,
        name=part.tool_name,
        tool_call_id=part.tool_call_id,
        status="error" if getattr(part, "outcome", None) in _ERRORS else "success",
        metadata=_marks(metadata),
    )


def _turn(response: ModelResponse) -> Message:
    texts = [p.content for p in response.parts if isinstance(p, TextPart)]
    calls = tuple(
        ToolCall(p.tool_call_id, p.tool_name, _args(p))
        for p in response.parts
        if isinstance(p, ToolCallPart)
    )
    return Message(
        role="assistant",
        content="\n".join(texts),
        tool_calls=calls,
        metadata=_marks(getattr(response, "metadata", None) or {}),
    )


def _args(part: ToolCallPart[Any]) -> Mapping[str, Any]:
    """A call's arguments as a mapping (``{}`` when its JSON is not an object: then no cut
    can name a key of it)."""
    try:
        return part.args_as_dict()
    except (ValueError, TypeError, AssertionError):
        return {}


def _marks(metadata: Mapping[str, Any]) -> Mapping[str, Any]:
    marks = metadata.get(MARK_KEY)
    return {MARK_KEY: marks} if isinstance(marks, Mapping) else {}


# -- writing edits back ----------------------------------------------------------------------


def writable(edit: Edit, view: PartView, history: Sequence[ModelMessage]) -> bool:
    """Whether ``edit`` has a place to go: a string tool return whose ``metadata`` can hold
    the mark, or calls of that response whose arguments can be replaced."""
    i, j = view.where[edit.index]
    message = history[i]
    if edit.new_content is not None:
        if not isinstance(edit.new_content, str) or j < 0:
            return False
        part = message.parts[j]
        return (
            isinstance(part, ToolReturnPart)
            and isinstance(part.content, str)
            and (part.metadata is None or isinstance(part.metadata, Mapping))
        )
    if j >= 0 or not _has_metadata(message):  # the mark must go with the new arguments
        return False
    ids = {p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)}
    return bool(edit.tool_args) and set(edit.tool_args) <= ids


def _has_metadata(message: ModelMessage) -> bool:
    """Whether a response can hold the mark (not every pydantic-ai release has the field)."""
    if "metadata" not in {f.name for f in fields(message)}:
        return False
    metadata = getattr(message, "metadata", None)
    return metadata is None or isinstance(metadata, Mapping)


def apply(
    history: Sequence[ModelMessage], view: PartView, edits: Sequence[Edit]
) -> list[ModelMessage]:
    """A new list with ``edits`` written onto the parts they name (the input is not changed:
    each edited message and part is a copy, every other one the same object)."""
    out = list(history)
    for edit in edits:
        i, j = view.where[edit.index]
        message = out[i]
        if isinstance(message, ModelResponse):
            out[i] = _with_args(message, edit)
        elif isinstance(message, ModelRequest) and isinstance(edit.new_content, str):
            parts = list(message.parts)
            parts[j] = _with_text(parts[j], edit.new_content, edit.metadata)
            out[i] = replace(message, parts=parts)
    return out


def _with_text(part: Any, text: str, mark: Mapping[str, Any]) -> Any:
    return replace(part, content=text, metadata=merged_metadata(part.metadata, mark))


def _with_args(response: ModelResponse, edit: Edit) -> ModelResponse:
    parts = [
        _new_args(p, edit.tool_args[p.tool_call_id])
        if isinstance(p, ToolCallPart) and p.tool_call_id in edit.tool_args
        else p
        for p in response.parts
    ]
    return replace(
        response, parts=parts, metadata=merged_metadata(response.metadata, edit.metadata)
    )


def _new_args(part: ToolCallPart[Any], args: Mapping[str, Any]) -> ToolCallPart[Any]:
    """``part`` with ``args``, in the form it had (a JSON string stays a JSON string)."""
    if isinstance(part.args, str):
        return replace(part, args=json.dumps(dict(args), ensure_ascii=False))
    return replace(part, args=dict(args))
