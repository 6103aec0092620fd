"""LangChain messages read as neutral :class:`~tokenlean.transcript.Message` views: the
conversion, and the :class:`ViewCache` that converts each message object once while it stays
unchanged. Writing edits back is :mod:`tokenlean.langchain._adapter`'s."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from tokenlean import checks
from tokenlean.transcript import Content, Message, Role, ToolCall

__all__ = ["ViewCache", "convert", "langchain_messages", "role_of", "views_of"]

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


def convert(message: BaseMessage) -> Message:
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
        metadata=message.response_metadata,
    )


class _Remembered(weakref.ref):  # type: ignore[type-arg]  # a ref to a BaseMessage
    """A message's view, with what it was read from; dropped when the message is."""

    __slots__ = ("fields", "key", "view")

    fields: tuple[object, ...]
    key: int
    view: Message


_MAX_VIEWS = 1 << 16  # a bound for a middleware that sees very many messages alive at once


def _read_fields(message: BaseMessage) -> tuple[object, ...]:
    """Every attribute the conversion reads."""
    fields = (message.type, message.content, message.id, message.name, message.response_metadata)
    if isinstance(message, AIMessage):
        return (*fields, message.tool_calls)
    if isinstance(message, ToolMessage):
        return (*fields, message.tool_call_id, message.status)
    return fields


class ViewCache:
    """The views of the messages one owner reads, each converted once while it stays unchanged.

    A middleware owns one (made in its ``__init__``, shared by every thread and agent using the
    instance): it reads the newest messages on each call, and a message stays in the transcript
    for the rest of the run. Views are kept by message id(), each held by a weak reference to
    its message (the id is only read while the message lives, so it is never another
    message's), and at most ``max_views`` of them. Dict reads and writes are atomic, so threads
    share it without a lock (at worst two of them convert one message each).
    """

    __slots__ = ("_forget", "_max", "_views")

    def __init__(self, *, max_views: int = _MAX_VIEWS) -> None:
        self._views: dict[int, _Remembered] = {}
        self._max = max_views
        # one callback for every entry (a bound method would be one more object per view)
        self._forget = functools.partial(_forget, self._views)

    def view(self, message: BaseMessage) -> Message:
        """``message`` as a neutral :class:`Message`, converted once while it stays unchanged.

        A view is reused only for the very same object whose fields are the same objects (or
        equal ones) as when it was read, so assigning a new content, id, name, metadata, tool
        calls or status converts it again; like every memo of a transcript, it takes a message
        changed *inside* a field (a content list appended to in place) for unchanged.
        """
        key = id(message)
        ref = self._views.get(key)
        fields = _read_fields(message)
        if ref is not None and ref() is message and ref.fields == fields:
            return ref.view
        view = convert(message)
        if len(self._views) >= self._max:
            self._views.clear()
        try:
            ref = _Remembered(message, self._forget)
        except TypeError:  # a message class without weak references: not remembered
            return view
        ref.fields, ref.key, ref.view = fields, key, view
        self._views[key] = ref
        return view


def _forget(views: dict[int, _Remembered], ref: _Remembered) -> None:
    """Drop the entry of a message that is gone."""
    if views.get(ref.key) is ref:  # not a newer entry under a reused id
        views.pop(ref.key, None)


def views_of(
    messages: Sequence[BaseMessage],
    start: int = 0,
    stop: int | None = None,
    *,
    cache: ViewCache,
) -> list[Message]:
    """:func:`to_view` for an owner of a :class:`ViewCache` reading the same messages again: a
    middleware's own state, whose messages LangGraph already holds as a list of messages (not
    checked again on every call), each converted once while it stays unchanged."""
    return [cache.view(m) for m in messages[start:stop]]


def langchain_messages(messages: object, name: str) -> list[BaseMessage]:
    """``messages`` as a list, refusing a string, a mapping or an item that is no message."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        raise checks.ArgumentTypeError(
            f"{name} must be a list of LangChain messages, got {checks.described(messages)}"
        )
    items = list(messages)
    for index, item in enumerate(items):
        if not isinstance(item, BaseMessage):
            raise checks.ArgumentTypeError(
                f"{name}[{index}] must be a LangChain message (BaseMessage), got "
                + checks.described(item)
            )
    return items
