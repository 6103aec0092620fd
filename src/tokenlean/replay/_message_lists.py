"""One list of messages read into neutral :class:`~tokenlean.transcript.Message` objects: the
neutral JSON, LangChain message dumps (``messages_to_dict``), OpenAI chat-completions messages
and Anthropic Messages API messages, told apart message by message. Anything malformed raises
:class:`TrajectoryFormatError` naming the file and the position."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from tokenlean.transcript import Message, ToolCall

__all__ = ["Json", "TrajectoryFormatError", "message_sequence_problem", "read_messages"]

Json = Any


class TrajectoryFormatError(ValueError):
    """A trace file that cannot be read; the message names the file and the position."""

    def __init__(self, source: str, position: str, problem: str) -> None:
        super().__init__(f"{source}: {position}: {problem}")
        self.source = source
        self.position = position
        self.problem = problem


def read_messages(items: list[Json], system: Json, *, source: str, where: str) -> list[Message]:
    """The messages of ``items`` (after ``system``, when there is one), in order; ``source``
    and ``where`` (the list's position in the file) name what a malformed message is in."""
    return _Reader(source, where).read(items, system)


_LC_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
_LC_ROLES |= {"SystemMessage": "system", "HumanMessage": "user", "AIMessage": "assistant"}
_LC_ROLES |= {"ToolMessage": "tool", "AIMessageChunk": "assistant"}
_OPENAI_ROLES = {"system": "system", "developer": "system", "user": "user"}
_OPENAI_ROLES |= {"assistant": "assistant", "tool": "tool"}


class _Reader:
    """Reads one message list, remembering where it is for error messages."""

    def __init__(self, source: str, where: str) -> None:
        self.source = source
        self.where = where
        self.out: list[Message] = []

    def fail(self, position: str, problem: str) -> TrajectoryFormatError:
        return TrajectoryFormatError(self.source, position, problem)

    def read(self, items: list[Json], system: Json) -> list[Message]:
        if system is not None:
            self.out.append(Message(role="system", content=self._text(system, "system")))
        for i, item in enumerate(items):
            pos = f"{self.where}[{i}]"
            if not isinstance(item, Mapping):
                raise self.fail(pos, f"expected an object, got {type(item).__name__}")
            if "data" in item and "type" in item and isinstance(item["data"], Mapping):
                self._langchain(item, pos)
            elif "role" in item:
                self._role_message(item, pos)
            else:
                raise self.fail(pos, "a message needs a 'role' (or LangChain 'type' and 'data')")
        return self.out

    # -- LangChain messages_to_dict ------------------------------------------------------------
    def _langchain(self, item: Mapping[str, Any], pos: str) -> None:
        role = _LC_ROLES.get(str(item["type"]))
        if role is None:
            raise self.fail(f"{pos}.type", f"unknown LangChain message type {item['type']!r}")
        data = item["data"]
        calls = tuple(
            self._call(c.get("id"), c.get("name"), c.get("args", {}), f"{pos}.data.tool_calls[{j}]")
            for j, c in enumerate(self._list(data.get("tool_calls"), f"{pos}.data.tool_calls"))
        )
        status: Literal["error"] | None = "error" if data.get("status") == "error" else None
        self.out.append(
            Message(
                role=role,  # type: ignore[arg-type]  # values of _LC_ROLES are roles
                content=self._content(data.get("content", ""), f"{pos}.data.content"),
                id=data.get("id"),
                name=data.get("name"),
                tool_calls=calls,
                tool_call_id=data.get("tool_call_id") if role == "tool" else None,
                status=status if role == "tool" else None,
            )
        )

    # -- neutral, OpenAI, Anthropic ------------------------------------------------------------
    def _role_message(self, item: Mapping[str, Any], pos: str) -> None:
        role = _OPENAI_ROLES.get(str(item["role"]))
        if role is None:
            raise self.fail(f"{pos}.role", f"unknown role {item['role']!r}")
        content = item.get("content")
        if isinstance(content, list) and any(_block_type(b) in _ANTHROPIC for b in content):
            self._anthropic(role, content, item, pos)
            return
        calls = tuple(
            self._openai_or_neutral_call(c, f"{pos}.tool_calls[{j}]")
            for j, c in enumerate(self._list(item.get("tool_calls"), f"{pos}.tool_calls"))
        )
        if role == "tool" and not isinstance(item.get("tool_call_id"), str):
            raise self.fail(f"{pos}.tool_call_id", "a tool message needs a tool_call_id")
        is_error = item.get("status") == "error" or bool(item.get("is_error"))
        status: Literal["error"] | None = "error" if is_error else None
        self.out.append(
            Message(
                role=role,  # type: ignore[arg-type]  # values of _OPENAI_ROLES are roles
                content=self._content(content if content is not None else "", f"{pos}.content"),
                id=item.get("id") if isinstance(item.get("id"), str) else None,
                name=item.get("name") if isinstance(item.get("name"), str) else None,
                tool_calls=calls,
                tool_call_id=item.get("tool_call_id") if role == "tool" else None,
                status=status if role == "tool" else None,
            )
        )

    def _openai_or_neutral_call(self, call: Json, pos: str) -> ToolCall:
        if not isinstance(call, Mapping):
            raise self.fail(pos, "a tool call must be an object")
        function = call.get("function")
        if isinstance(function, Mapping):  # OpenAI: arguments are a JSON string
            arguments = function.get("arguments") or "{}"
            try:
                args = json.loads(arguments) if isinstance(arguments, str) else arguments
            except json.JSONDecodeError as exc:
                raise self.fail(f"{pos}.function.arguments", f"invalid JSON: {exc.msg}") from None
            return self._call(call.get("id"), function.get("name"), args, pos)
        return self._call(call.get("id"), call.get("name"), call.get("args", {}), pos)

    def _anthropic(self, role: str, blocks: list[Json], item: Mapping[str, Any], pos: str) -> None:
        texts: list[str] = []
        calls: list[ToolCall] = []
        results: list[Message] = []
        for j, block in enumerate(blocks):
            where, kind = f"{pos}.content[{j}]", _block_type(block)
            if kind == "text":
                texts.append(self._text(block.get("text", ""), where))
            elif kind == "tool_use":
                calls.append(
                    self._call(block.get("id"), block.get("name"), block.get("input"), where)
                )
            elif kind == "tool_result":
                if not isinstance(block.get("tool_use_id"), str):
                    raise self.fail(f"{where}.tool_use_id", "a tool_result needs a tool_use_id")
                results.append(
                    Message(
                        role="tool",
                        content=self._text(block.get("content", ""), f"{where}.content"),
                        tool_call_id=block["tool_use_id"],
                        status="error" if block.get("is_error") else None,
                    )
                )
        self.out.extend(results)
        if texts or calls or not results:
            self.out.append(
                Message(
                    role=role,  # type: ignore[arg-type]  # user or assistant here
                    content="\n".join(texts),
                    id=item.get("id") if isinstance(item.get("id"), str) else None,
                    tool_calls=tuple(calls),
                )
            )

    # -- pieces --------------------------------------------------------------------------------
    def _call(self, call_id: Json, name: Json, args: Json, pos: str) -> ToolCall:
        if not isinstance(name, str) or not name:
            raise self.fail(f"{pos}.name", "a tool call needs a name")
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise self.fail(f"{pos}.args", "tool-call arguments must be an object")
        return ToolCall(id=str(call_id or f"call_{len(self.out)}"), name=name, args=dict(args))

    def _list(self, value: Json, pos: str) -> list[Json]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(pos, "expected a list")
        return value

    def _content(self, value: Json, pos: str) -> str | tuple[Mapping[str, Any], ...]:
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            blocks = []
            for j, block in enumerate(value):
                if isinstance(block, str):
                    block = {"type": "text", "text": block}
                if not isinstance(block, Mapping):
                    raise self.fail(f"{pos}[{j}]", "a content block must be an object")
                blocks.append(block)
            return tuple(blocks)
        raise self.fail(
            pos, f"content must be text or a list of blocks, got {type(value).__name__}"
        )

    def _text(self, value: Json, pos: str) -> str:
        content = self._content(value, pos)
        if isinstance(content, str):
            return content
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b.get("text"), str))


_ANTHROPIC = {"tool_use", "tool_result"}


def _block_type(block: Json) -> str:
    return str(block.get("type")) if isinstance(block, Mapping) else ""


def message_sequence_problem(messages: Sequence[Message]) -> str | None:
    """Why a message list cannot be replayed as an agent run, or None if it can."""
    if not any(m.role == "assistant" for m in messages):
        return "no assistant turns to replay"
    open_calls: set[str] = set()
    for i, message in enumerate(messages):
        if message.role == "tool":
            if message.tool_call_id not in open_calls:
                return f"message {i}: a tool result answers no open call ({message.tool_call_id})"
            open_calls.discard(message.tool_call_id)
        elif open_calls:
            return f"message {i}: calls left without results: {', '.join(sorted(open_calls))}"
        else:
            open_calls = {c.id for c in message.tool_calls}
    if open_calls:
        return f"the run ends with calls left without results: {', '.join(sorted(open_calls))}"
    return None
