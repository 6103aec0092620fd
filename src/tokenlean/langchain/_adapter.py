"""Between LangChain messages and the neutral transcript view: the one LangChain applier.

:func:`to_view` reads ``BaseMessage`` objects into :class:`~tokenlean.transcript.Message`;
:func:`apply_edits` writes :class:`~tokenlean.transcript.Edit` objects back with
``model_copy`` so that every field an edit does not name (``name``, ``status``, ``artifact``,
``additional_kwargs``, ``response_metadata``, ``usage_metadata``, tool calls, ids) survives.
Every tokenlean middleware changes messages through :func:`apply_edits` and nothing else. The
conversion of one message and the cache of views are :mod:`tokenlean.langchain._views`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from tokenlean import checks
from tokenlean.langchain._views import ViewCache, convert, langchain_messages, views_of
from tokenlean.transcript import Content, Edit, Message, checked_messages, merged_metadata

__all__ = [
    "Turns",
    "ViewCache",
    "apply_edit",
    "apply_edits",
    "from_view",
    "replace_content",
    "to_view",
    "views_of",
]

M = TypeVar("M", bound=BaseMessage)


def to_view(
    messages: Iterable[BaseMessage],
    start: int = 0,
    stop: int | None = None,
    *,
    cache: ViewCache | None = None,
) -> list[Message]:
    """LangChain messages (``messages[start:stop]``) as neutral messages, in order.

    With the inverse :func:`from_view`, the one pair of conversions between LangChain and the
    core. Without ``cache`` the messages are converted afresh on every call; a caller that
    reads the same messages again (a measurement over every call of a run) keeps a
    :class:`ViewCache` and passes it, so each message object is converted once.
    """
    items = langchain_messages(messages, "messages")
    if cache is None:
        return [convert(m) for m in items[start:stop]]
    return views_of(items, start, stop, cache=cache)


def from_view(messages: Iterable[Message]) -> list[BaseMessage]:
    """Neutral messages as LangChain messages (a recorded trace loaded into an agent)."""
    return [
        _message(m) for m in checked_messages(list(messages) if _listable(messages) else messages)
    ]


def _listable(value: object) -> bool:
    return isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping, Sequence))


def _message(message: Message) -> BaseMessage:
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
    return message.model_copy(update={"content": _raw_content(content)})


def _raw_content(content: Content) -> Any:
    return content if isinstance(content, str) else [dict(block) for block in content]


def apply_edit(message: M, edit: Edit) -> M:
    """A copy of ``message`` with ``edit`` applied; every field the edit does not name kept.

    New tool arguments go everywhere a provider could read them: ``tool_calls``, Anthropic
    ``tool_use`` and v1 ``tool_call`` content blocks, and OpenAI raw calls in
    ``additional_kwargs``. Metadata entries are merged into ``response_metadata``.
    """
    update: dict[str, Any] = {}
    content: Any = message.content
    if edit.new_content is not None:
        content = update["content"] = _raw_content(edit.new_content)
    if edit.tool_args and isinstance(message, AIMessage):
        update.update(_args_update(message, content, edit.tool_args))
    if edit.metadata:
        update["response_metadata"] = merged_metadata(message.response_metadata, edit.metadata)
    return message.model_copy(update=update) if update else message


def _args_update(
    turn: AIMessage, content: Any, new_args: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    update: dict[str, Any] = {
        "tool_calls": [
            {**c, "args": dict(new_args[c["id"] or ""])} if c.get("id") in new_args else c
            for c in turn.tool_calls
        ]
    }
    if isinstance(content, list):
        update["content"] = [_block(b, new_args) for b in content]
    raw = turn.additional_kwargs.get("tool_calls")
    if isinstance(raw, list):  # OpenAI-style raw calls
        calls = [_raw_call(r, new_args) for r in raw]
        update["additional_kwargs"] = {**turn.additional_kwargs, "tool_calls": calls}
    return update


def _block(block: Any, new_args: Mapping[str, Mapping[str, Any]]) -> Any:
    if not isinstance(block, dict) or block.get("id") not in new_args:
        return block
    if block.get("type") == "tool_use":  # Anthropic-style
        return {**block, "input": dict(new_args[block["id"]])}
    if block.get("type") == "tool_call":  # LangChain v1 standard block
        return {**block, "args": dict(new_args[block["id"]])}
    return block


def _raw_call(raw: Any, new_args: Mapping[str, Mapping[str, Any]]) -> Any:
    if not isinstance(raw, dict) or raw.get("id") not in new_args:
        return raw
    function = dict(raw.get("function") or {})
    function["arguments"] = json.dumps(new_args[raw["id"]], ensure_ascii=False)
    return {**raw, "function": function}


def apply_edits(messages: Sequence[M], edits: Iterable[Edit]) -> list[M]:
    """Apply edits by message id (or, for id-less messages, by index); never mutates inputs.

    An edit whose target is missing, or whose index no longer holds a message with the same id,
    is ignored rather than applied to the wrong message.
    """
    result: list[M] = langchain_messages(messages, "messages")  # type: ignore[assignment]
    if isinstance(edits, (str, bytes, Mapping)) or not isinstance(edits, Iterable):
        raise checks.ArgumentTypeError(
            f"edits must be a list of Edits, got {checks.described(edits)}"
        )
    position: dict[str, int] | None = None
    for edit in edits:
        if not isinstance(edit, Edit):
            raise checks.ArgumentTypeError(
                f"edits must hold Edits only, got {checks.described(edit)}"
            )
        index: int | None = None
        if 0 <= edit.index < len(result) and result[edit.index].id == edit.message_id:
            index = edit.index  # the common case: the view was read from these messages
        elif edit.message_id is not None:
            if position is None:
                position = {m.id: i for i, m in enumerate(result) if m.id is not None}
            index = position.get(edit.message_id)
        if index is not None:
            result[index] = apply_edit(result[index], edit)
    return result


class Turns:
    """LangChain's side of the per-call contract (:class:`tokenlean.turn.TurnAdapter`): its
    messages read through a middleware's view cache, an edit written by :func:`apply_edit`."""

    def __init__(self, cache: ViewCache) -> None:
        self._cache = cache

    def views(self, messages: Sequence[BaseMessage], start: int) -> list[Message]:
        return views_of(messages, start, cache=self._cache)

    def apply(self, message: BaseMessage, edit: Edit) -> BaseMessage:
        return apply_edit(message, edit)
