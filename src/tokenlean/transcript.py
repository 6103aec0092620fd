"""A neutral, framework-free view of an agent transcript, and the edits the core proposes.

This is the one contract between the core and its adapters. Every capability reads
:class:`Message` objects and returns :class:`Edit` objects; an adapter applies them to its own
message type (:func:`tokenlean.langchain._adapter.apply_edits` for LangChain messages, the raw API
adapters for provider request bodies) so that every field an edit does not name survives.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from tokenlean import checks

__all__ = [
    "INJECTED_ID_PREFIX",
    "MARK_KEY",
    "ROLES",
    "Content",
    "Edit",
    "Message",
    "Role",
    "ToolCall",
    "canonical",
    "checked_messages",
    "content_text",
    "is_injected",
    "mark",
    "mark_of",
    "merged_metadata",
]

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")

#: Message content: plain text, or provider-style content blocks (``{"type": "text", ...}``).
Content = str | tuple[Mapping[str, Any], ...]

#: Every message tokenlean's middleware adds (nudges, hints, notices) has an id with this prefix,
#: so other middleware can tell it from a message the user wrote.
INJECTED_ID_PREFIX = "tokenlean-"

#: Where an adapter records what tokenlean did to a message: ``metadata[MARK_KEY][capability]``.
MARK_KEY = "tokenlean"


def is_injected(message_id: object) -> bool:
    """Whether a message id marks a message added by tokenlean rather than by the user."""
    return isinstance(message_id, str) and message_id.startswith(INJECTED_ID_PREFIX)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call made by an assistant turn."""

    id: str
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        checks.text(self.id, "id")
        checks.text(self.name, "name")
        if not isinstance(self.args, Mapping):
            raise checks.ArgumentTypeError(
                f"args must be a mapping of argument names to values, got "
                f"{checks.described(self.args)}"
            )


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a transcript, independent of any framework.

    ``content`` is either text or a tuple of content blocks; :attr:`text` flattens it.
    ``status`` is ``"error"`` for tool results that report a failure. ``metadata`` is what the
    framework keeps beside the message (LangChain's ``response_metadata``), read-only and never
    sent to the model: it is where earlier edits left their marks (see :func:`mark_of`).
    """

    role: Role
    content: Content = ""
    id: str | None = None
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    status: Literal["success", "error"] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        checks.one_of(self.role, "role", ROLES)
        if not isinstance(self.content, (str, tuple, list)):
            raise checks.ArgumentTypeError(
                f"content must be text or a tuple of content blocks, got "
                f"{checks.described(self.content)}"
            )
        checks.optional_text(self.id, "id")
        checks.optional_text(self.name, "name")
        checks.optional_text(self.tool_call_id, "tool_call_id")
        for call in checks.sequence(self.tool_calls, "tool_calls", of="ToolCalls"):
            if not isinstance(call, ToolCall):
                raise checks.ArgumentTypeError(
                    f"tool_calls must hold ToolCalls only, got {checks.described(call)}"
                )

    @property
    def text(self) -> str:
        return content_text(self.content)

    @property
    def is_text_only(self) -> bool:
        """True when every content block is text, so rewriting the text loses nothing."""
        return isinstance(self.content, str) or all(
            block.get("type") == "text" for block in self.content
        )


@dataclass(frozen=True, slots=True)
class Edit:
    """A proposed change to one message: which one, what changes, why, and what it saves.

    ``message_id`` addresses the message when it has an id; ``index`` is its position in the
    view the edit was computed from, used when the message has no id. ``new_content`` replaces
    the content (``None``: unchanged), in the shape the view had (text stays text);
    ``tool_args`` replaces the arguments of the named tool calls (call id -> arguments), wherever
    the adapter's message keeps them; ``metadata`` entries are recorded beside the message by
    adapters that keep metadata (mappings are merged one level deep) and never sent.
    """

    index: int
    message_id: str | None
    new_content: Content | None
    reason: str
    tokens_before: int
    tokens_after: int
    tool_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        checks.integer(self.index, "index", at_least=0)
        checks.optional_text(self.message_id, "message_id")
        checks.text(self.reason, "reason")

    @property
    def tokens_saved(self) -> int:
        return self.tokens_before - self.tokens_after


def checked_messages(value: object, name: str = "messages") -> Sequence[Message]:
    """``value`` if it is a sequence of tokenlean :class:`Message`; else a clear
    :class:`~tokenlean.checks.ArgumentTypeError` naming ``name``."""
    items = checks.sequence(value, name, of="tokenlean Messages")
    for index, item in enumerate(items):
        if not isinstance(item, Message):
            raise checks.ArgumentTypeError(
                f"{name}[{index}] must be a tokenlean Message (see tokenlean.langchain.to_view), "
                f"got {checks.described(item)}"
            )
    return cast("Sequence[Message]", items)


def mark_of(message: Message, capability: str) -> Mapping[str, Any] | None:
    """The mark ``capability`` left on ``message`` through an edit's metadata, if any."""
    marks = message.metadata.get(MARK_KEY)
    mark = marks.get(capability) if isinstance(marks, Mapping) else None
    return mark if isinstance(mark, Mapping) else None


def mark(capability: str, entry: Mapping[str, Any]) -> Mapping[str, Any]:
    """Edit metadata that records ``entry`` as ``capability``'s mark on the message."""
    return {MARK_KEY: {capability: dict(entry)}}


def merged_metadata(metadata: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` with ``new``'s entries merged one level deep: how every adapter records an
    edit's :attr:`Edit.metadata` (a second capability's mark joins the first's)."""
    out = dict(metadata or {})
    for key, value in new.items():
        old = out.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            value = {**old, **value}
        out[key] = value
    return out


def content_text(content: object) -> str:
    """Flatten message content (a string or a list of blocks) to its text."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return ""


def canonical(message: Message) -> str:
    """The bytes a provider would receive for ``message``: stable across runs, id-free.

    Two messages with equal canonical forms cost the same and hit the same cache entry.
    """
    body: dict[str, Any] = {"role": message.role, "content": _jsonable(message.content)}
    if message.tool_calls:
        body["tool_calls"] = [
            {"id": call.id, "name": call.name, "args": _jsonable(call.args)}
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        body["tool_call_id"] = message.tool_call_id
    if message.role == "tool" and message.name:
        body["name"] = message.name
    return json.dumps(body, ensure_ascii=False, sort_keys=True, default=str)


def _jsonable(value: object) -> object:
    if isinstance(value, tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _jsonable(item) for key, item in value.items()}
    return value
