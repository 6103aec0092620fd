"""Codex rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) as neutral messages.

A rollout logs Responses API items (``response_item``): messages, ``function_call`` /
``custom_tool_call`` / ``local_shell_call`` (a built-in shell's call, which has no name: it is
named ``local_shell``) / ``apply_patch_call`` (the built-in patch tool's, named ``apply_patch``
with its diff as ``input``, as the raw rewrite reads it) and their outputs. Consecutive
assistant items (a message and the calls after it) make one assistant turn. ``event_msg``
lines echo the same conversation for the UI and are skipped, as are encrypted ``reasoning`` and
``ghost_snapshot`` items. Outputs are kept as the model read them: the ``{"output": ...,
"metadata": ...}`` JSON string of older CLIs included. Developer messages before the
conversation become the system prompt, later ones user messages.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from tokenlean.raw._openai_responses import patch_arguments
from tokenlean.transcript import Message, ToolCall

#: The calls, each with the name it has when the item names none
_CALLS = {
    "function_call": None,
    "custom_tool_call": None,
    "local_shell_call": "local_shell",
    "apply_patch_call": "apply_patch",
}
_OUTPUTS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "apply_patch_call_output",
    }
)
_DROPPED = frozenset({"reasoning", "ghost_snapshot"})


def read_codex(objects: Sequence[Any]) -> tuple[list[Message], dict[str, Any]]:
    """Neutral messages of one Codex rollout, and counts of what was skipped."""
    reader = _Reader()
    for obj in objects:
        reader.line(obj)
    return reader.messages(), {**reader.session, "skipped": dict(sorted(reader.skipped.items()))}


class _Reader:
    def __init__(self) -> None:
        self.out: list[Message] = []
        self.system: list[str] = []
        self.texts: list[str] = []
        self.calls: list[ToolCall] = []
        self.skipped: Counter[str] = Counter()
        self.session: dict[str, Any] = {}

    def line(self, obj: Any) -> None:
        payload = obj.get("payload") if isinstance(obj, Mapping) else None
        if not isinstance(payload, Mapping):
            self.skipped["not_a_rollout_line"] += 1
            return
        kind = str(obj.get("type"))
        if kind == "response_item":
            self._item(payload)
        elif kind == "session_meta":
            for key in ("id", "cli_version", "originator"):
                if isinstance(payload.get(key), str):
                    self.session.setdefault("session_id" if key == "id" else key, payload[key])
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            self.session.setdefault("model", payload["model"])
        elif kind not in ("turn_context", "event_msg"):  # event_msg: the UI's echo of items
            self.skipped[f"line:{kind}"] += 1

    def _item(self, item: Mapping[str, Any]) -> None:
        kind = str(item.get("type"))
        if kind == "message":
            self._message(item)
        elif kind in _CALLS and isinstance(name := item.get("name", _CALLS[kind]), str):
            call_id = item.get("call_id") or item.get("id")
            self.calls.append(ToolCall(id=str(call_id), name=name, args=_args(item)))
        elif kind in _OUTPUTS and isinstance(call_id := item.get("call_id"), str):
            self._flush()
            output = _output(item.get("output"))
            self.out.append(Message(role="tool", content=output, tool_call_id=call_id))
        else:
            self.skipped[f"{'dropped' if kind in _DROPPED else 'item'}:{kind}"] += 1

    def _message(self, item: Mapping[str, Any]) -> None:
        text = _text(item.get("content"))
        role = item.get("role")
        if role == "assistant":
            if self.calls:  # text after calls starts the next turn
                self._flush()
            self.texts.append(text)
            return
        self._flush()
        if role in ("developer", "system") and not self.out:
            self.system.append(text)
        elif role in ("user", "developer", "system"):
            self.out.append(Message(role="user", content=text))
        else:
            self.skipped[f"message_role:{role}"] += 1

    def _flush(self) -> None:
        if self.texts or self.calls:
            content = "\n".join(self.texts)
            self.out.append(
                Message(role="assistant", content=content, tool_calls=tuple(self.calls))
            )
            self.texts, self.calls = [], []

    def messages(self) -> list[Message]:
        self._flush()
        head = [Message(role="system", content="\n\n".join(self.system))] if self.system else []
        return head + self.out


def _args(item: Mapping[str, Any]) -> dict[str, Any]:
    """Function arguments are a JSON object in a string; a custom tool's input is free text."""
    if item.get("type") == "apply_patch_call":
        return patch_arguments(item.get("operation"))
    raw = item.get("arguments", item.get("input", item.get("action")))
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            parsed = None
        return dict(parsed) if isinstance(parsed, Mapping) else {"input": raw}
    return dict(raw) if isinstance(raw, Mapping) else {}


def _output(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping) and isinstance(text := output.get("content"), str):
        return text
    return json.dumps(output, ensure_ascii=False)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(b["text"]) for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str)
    )
