"""OpenAI Responses bodies (``POST /v1/responses``) as a neutral view.

``input`` is a list of items. Tool results are ``function_call_output``,
``custom_tool_call_output``, ``local_shell_call_output`` and ``apply_patch_call_output`` items
(string output or a list of text parts), and ``shell_call_output`` items (a list of
``stdout``/``stderr`` chunks); past tool inputs are ``function_call.arguments`` (a JSON string),
``custom_tool_call.input`` and the built-in ``apply_patch_call``'s ``operation.diff`` (a call
the view names ``apply_patch``, as Codex names its own patch tool, with the diff as its
``input`` and the file as its ``path``; a deletion has no diff and is only read). The built-in
shells' calls (``shell_call``, ``local_shell_call``) are calls the view names ``shell`` and
``local_shell`` with their command, so their outputs are read as a command's output; their
actions are never rewritten. An assistant turn is a run of consecutive assistant items
(messages, reasoning, calls), as the model produced them. ``instructions``, reasoning items
(encrypted content), hosted tools' calls, item references and every field the view does not
know pass through as the same objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokenlean.raw._openai_chat import parse_arguments
from tokenlean.raw._reading import read_items
from tokenlean.raw._view import (
    RawView,
    Slot,
    ViewBuilder,
    plain_text,
    result_content,
    shell_output,
)
from tokenlean.transcript import Message, Role, ToolCall

__all__ = ["patch_arguments", "read"]

_ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user"}
_OUTPUTS = (
    "function_call_output",
    "custom_tool_call_output",
    "local_shell_call_output",
    "apply_patch_call_output",
)
_CALLS = ("function_call", "custom_tool_call", "shell_call", "local_shell_call", "apply_patch_call")


class _Turn:
    """The assistant items read so far of the current turn."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.calls: list[tuple[ToolCall, Slot | None]] = []
        self.open = False

    def close(self, out: ViewBuilder) -> None:
        if self.open:
            out.turn("\n".join(t for t in self.texts if t), self.calls)
        self.texts, self.calls, self.open = [], [], False


def read(body: Mapping[str, Any]) -> RawView | None:
    """The neutral view of ``body``, or ``None`` when its ``input`` is not a list of items."""
    items = body.get("input")
    if not isinstance(items, list):
        return None
    return read_items(items, _Reading(items), _Reading)


class _Reading:
    """A pass over ``input``: at rest between turns, until a local shell's output is named by
    its call item's ``id`` (the aliases are the whole list's, so what follows may read
    differently once items are added)."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.turn = _Turn()
        self._aliases: dict[str, str] | None = None

    def aliases(self) -> Mapping[str, str]:
        # a local shell's output may name its call by the call item's ``id`` (the API
        # reference) rather than its ``call_id`` (what the Agents SDK sends): both lead to the
        # same call
        if self._aliases is None:
            self._aliases = {
                item["id"]: item["call_id"]
                for item in self.items
                if isinstance(item, Mapping)
                and item.get("type") == "local_shell_call"
                and isinstance(item.get("id"), str)
                and isinstance(item.get("call_id"), str)
            }
        return self._aliases

    def item(self, out: ViewBuilder, j: int, item: Any) -> None:
        turn = self.turn
        if not isinstance(item, Mapping):
            turn.close(out)
            return
        kind, role = item.get("type", "message"), item.get("role")
        if kind == "message" and role == "assistant":
            turn.open = True
            turn.texts.append(plain_text(item.get("content")))
        elif kind == "reasoning":
            turn.open = True
        elif kind in _CALLS:
            turn.open = True
            turn.calls += _call(item, j)
        else:
            turn.close(out)
            _other(out, item, j, self)

    def end(self, out: ViewBuilder) -> None:
        self.turn.close(out)

    def rest(self) -> tuple[Any, ...] | None:
        return None if self.turn.open or self._aliases is not None else ()

    def resume(self, state: tuple[Any, ...]) -> None:
        pass


def _call(item: Mapping[str, Any], j: int) -> list[tuple[ToolCall, Slot | None]]:
    if item.get("type") in ("shell_call", "local_shell_call"):
        return _shell_call(item)
    if item.get("type") == "apply_patch_call":
        return _patch_call(item, j)
    call_id, name = item.get("call_id"), item.get("name")
    if not isinstance(call_id, str) or not isinstance(name, str):
        return []
    if item.get("type") == "function_call":
        args = parse_arguments(item.get("arguments"))
        slot = Slot(("input", j, "arguments"), "json") if args is not None else None
        return [(ToolCall(call_id, name, args or {}), slot)]
    text = item.get("input")
    if not isinstance(text, str):
        return [(ToolCall(call_id, name, {}), None)]
    return [(ToolCall(call_id, name, {"input": text}), Slot(("input", j, "input"), "raw-text"))]


def _shell_call(item: Mapping[str, Any]) -> list[tuple[ToolCall, Slot | None]]:
    """A built-in shell's call, named by its tool, with its command (one line per command)."""
    call_id, action = item.get("call_id"), item.get("action")
    if not isinstance(call_id, str):
        return []
    local = item.get("type") == "local_shell_call"
    words = action.get("command" if local else "commands") if isinstance(action, Mapping) else None
    ok = isinstance(words, list) and all(isinstance(word, str) for word in words)
    command = (" " if local else "\n").join(words) if ok else ""  # type: ignore[arg-type]
    return [(ToolCall(call_id, "local_shell" if local else "shell", {"command": command}), None)]


def _patch_call(item: Mapping[str, Any], j: int) -> list[tuple[ToolCall, Slot | None]]:
    """The built-in apply_patch's call: its diff is written back where it came from, every other
    field of the item and its operation (``type``, ``path``, ``move_to``) kept."""
    call_id = item.get("call_id")
    if not isinstance(call_id, str):
        return []
    args = patch_arguments(item.get("operation"))
    slot = Slot(("input", j, "operation", "diff"), "raw-text") if "input" in args else None
    return [(ToolCall(call_id, "apply_patch", args), slot)]


def patch_arguments(operation: object) -> dict[str, str]:
    """An ``apply_patch_call``'s operation as a call's arguments: its diff as ``input`` (as
    Codex's own patch tool takes it) and its file as ``path``, each when it is a string."""
    if not isinstance(operation, Mapping):
        return {}
    keys = (("input", "diff"), ("path", "path"))
    return {key: operation[field] for key, field in keys if isinstance(operation.get(field), str)}


def _other(out: ViewBuilder, item: Mapping[str, Any], j: int, reading: _Reading) -> None:
    kind, role, call_id = item.get("type", "message"), item.get("role"), item.get("call_id")
    if kind == "local_shell_call_output" and not isinstance(call_id, str):
        call_id = reading.aliases().get(str(item.get("id")))
    if kind in _OUTPUTS and isinstance(call_id, str):
        shown, slot = result_content(item.get("output"), ("input", j, "output"))
        out.result(Message(role="tool", content=shown, tool_call_id=call_id), slot)
    elif kind == "shell_call_output" and isinstance(call_id, str):
        shown, slot = shell_output(item.get("output"), ("input", j, "output"))
        out.result(Message(role="tool", content=shown, tool_call_id=call_id), slot)
    elif kind == "message" and isinstance(role, str) and role in _ROLES:
        out.add(Message(role=_ROLES[role], content=plain_text(item.get("content"))))
