"""OpenAI Chat Completions bodies (``POST /v1/chat/completions``) as a neutral view.

Tool results are ``role: tool`` messages (string content or a list of text parts); past tool
inputs are ``tool_calls[].function.arguments`` (a JSON string, re-serialised when cut) and the
``input`` of custom tool calls. ``system`` and ``developer`` messages, images, audio, refusals,
tools and every field the view does not know pass through as the same objects.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tokenlean.raw._reading import messages_reader
from tokenlean.raw._view import Slot, ViewBuilder, plain_text, result_content
from tokenlean.transcript import Message, ToolCall

__all__ = ["parse_arguments", "read"]


def _message(out: ViewBuilder, i: int, message: Mapping[str, Any]) -> None:
    role, content = message.get("role"), message.get("content")
    if role in ("system", "developer"):
        out.add(Message(role="system", content=plain_text(content)))
    elif role == "user":
        out.add(Message(role="user", content=plain_text(content)))
    elif role == "assistant":
        out.turn(plain_text(content), _calls(message.get("tool_calls"), i))
    elif role == "tool" and isinstance(message.get("tool_call_id"), str):
        shown, slot = result_content(content, ("messages", i, "content"))
        tool = Message(role="tool", content=shown, tool_call_id=message["tool_call_id"])
        out.result(tool, slot)


#: The neutral view of a Chat Completions body, or ``None`` when it has no message list.
read = messages_reader(_message)


def _calls(raw: object, i: int) -> list[tuple[ToolCall, Slot | None]]:
    calls: list[tuple[ToolCall, Slot | None]] = []
    for j, item in enumerate(raw if isinstance(raw, list) else ()):
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            continue
        base = ("messages", i, "tool_calls", j)
        function, custom = item.get("function"), item.get("custom")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            args = parse_arguments(function.get("arguments"))
            slot = Slot((*base, "function", "arguments"), "json") if args is not None else None
            calls.append((ToolCall(item["id"], function["name"], args or {}), slot))
        elif isinstance(custom, Mapping) and isinstance(custom.get("name"), str):
            text = custom.get("input")
            slot = Slot((*base, "custom", "input"), "raw-text") if isinstance(text, str) else None
            args = {"input": text} if isinstance(text, str) else {}
            calls.append((ToolCall(item["id"], custom["name"], args), slot))
    return calls


def parse_arguments(arguments: object) -> dict[str, Any] | None:
    """Arguments sent as a JSON string, when they are a JSON object (else ``None``)."""
    if not isinstance(arguments, str):
        return None
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
