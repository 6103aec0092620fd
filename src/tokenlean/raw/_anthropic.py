"""Anthropic Messages API bodies (``POST /v1/messages``) as a neutral view.

Tool results are the ``tool_result`` blocks of user messages (string content, or a list of text
blocks; results holding images or documents are left alone); past tool inputs are the ``input``
objects of ``tool_use`` blocks. Nothing else is ever written: thinking and redacted thinking
blocks (their signatures), images, documents, server-tool blocks, ``system``, tools, a
``system`` role inside ``messages`` and every field the view does not know pass through as the
same objects. ``cache_control`` is never read, so moving it does not change the rewrite.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from tokenlean.raw._reading import messages_reader
from tokenlean.raw._view import Slot, ViewBuilder, plain_text, result_content
from tokenlean.transcript import Message, ToolCall

__all__ = ["read"]


def _message(out: ViewBuilder, i: int, message: Mapping[str, Any]) -> None:
    role, content = message.get("role"), message.get("content")
    if role == "assistant":
        _assistant(out, i, content)
    elif role in ("user", "system"):
        _user(out, i, role, content)


#: The neutral view of an Anthropic Messages body, or ``None`` when it has no message list.
read = messages_reader(_message)


def _assistant(out: ViewBuilder, i: int, content: object) -> None:
    calls: list[tuple[ToolCall, Slot | None]] = []
    if isinstance(content, list):
        for j, block in enumerate(content):
            if not isinstance(block, Mapping) or block.get("type") != "tool_use":
                continue
            call_id, name, args = block.get("id"), block.get("name"), block.get("input")
            if not isinstance(call_id, str) or not isinstance(name, str):
                continue
            if isinstance(args, Mapping):
                slot = Slot(("messages", i, "content", j, "input"), "object")
                calls.append((ToolCall(call_id, name, args), slot))
            else:  # an input the view cannot show as arguments is never written
                calls.append((ToolCall(call_id, name, {}), None))
    out.turn(plain_text(content), calls)


def _user(out: ViewBuilder, i: int, role: str, content: object) -> None:
    if not isinstance(content, list):
        out.add(Message(role="system" if role == "system" else "user", content=plain_text(content)))
        return
    texts: list[str] = []
    for j, block in enumerate(content):
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            if texts:  # text before a result: keep the order the model reads them in
                out.add(Message(role="user", content="\n".join(texts)))
                texts = []
            _result(out, i, j, block)
        elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
            texts.append(block["text"])
    if texts or not any(isinstance(b, Mapping) and b.get("type") == "tool_result" for b in content):
        out.add(Message(role="system" if role == "system" else "user", content="\n".join(texts)))


def _result(out: ViewBuilder, i: int, j: int, block: Mapping[str, Any]) -> None:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        return
    content, slot = result_content(block.get("content"), ("messages", i, "content", j, "content"))
    status: Literal["error"] | None = "error" if block.get("is_error") is True else None
    out.result(Message(role="tool", content=content, tool_call_id=call_id, status=status), slot)
