"""Codex rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) as neutral messages.

A rollout logs Responses API items (``response_item``): messages, ``function_call`` /
``custom_tool_call`` / ``local_shell_call`` (a built-in shell's call, which has no name: it is
named ``local_shell``) / ``apply_patch_call`` (the built-in patch tool's, named ``apply_patch``
with its diff as ``input``, as the raw rewrite reads it) and their outputs. Consecutive
assistant items (a message and the calls after it) make one assistant turn. ``event_msg``
lines echo the same conversation for the UI and are skipped, as are encrypted ``reasoning``,
``compaction`` and ``ghost_snapshot`` items and lines such as ``world_state`` (counted in
``meta["skipped"]``). A custom tool's input is free text (``{"input": ...}``: code mode's
``exec`` cells of JavaScript included). Outputs are kept as the model read them: the
``{"output": ..., "metadata": ...}`` JSON string of older CLIs included, and an output given as a
list of parts is their text joined (parts that are not text, such as images, are kept as they
are beside it). The ``base_instructions`` of ``session_meta`` and the developer messages before
the conversation become the system prompt, later developer messages user messages.

A ``compacted`` line ends a context window: the model was sent everything before it until
then, and from then on the history the CLI rebuilds (and rebuilds again when it resumes the
session): the line's ``replacement_history``, or, when it has none, the user's messages so far
and the summary it holds. Each window is read as its own run (``meta["compactions"]`` counts
them, the messages a window did not carry over counted as ``compacted_away``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from tokenlean.raw import patch_arguments
from tokenlean.replay._windows import Windows, read_lines
from tokenlean.transcript import Content, Message, ToolCall

__all__ = ["read_codex"]

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
_DROPPED = frozenset({"reasoning", "ghost_snapshot", "compaction"})
_SESSION_KEYS = {
    "id": "session_id",
    "cli_version": "cli_version",
    "originator": "originator",
    "parent_thread_id": "parent_thread_id",
}


def read_codex(objects: Iterable[Any]) -> Windows:
    """Neutral messages of each context window of one Codex rollout, and counts of what was
    skipped."""
    return read_lines(_Reader(), objects)


class _Reader:
    def __init__(self) -> None:
        self.out: list[Message] = []
        self.instructions: str | None = None
        self.system: list[str] = []
        self.users: list[str] = []
        self.texts: list[str] = []
        self.calls: list[ToolCall] = []
        self.skipped: Counter[str] = Counter()
        self.session: dict[str, Any] = {}
        self.compactions = 0
        self.windows: list[list[Message]] = []

    def line(self, obj: Any) -> None:
        payload = obj.get("payload") if isinstance(obj, Mapping) else None
        if not isinstance(payload, Mapping):
            self.skipped["not_a_rollout_line"] += 1
            return
        kind = str(obj.get("type"))
        if kind == "response_item":
            self._item(payload)
        elif kind == "session_meta":
            self._session(payload)
        elif kind == "compacted":
            self._compacted(payload)
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            self.session.setdefault("model", payload["model"])
        elif kind not in ("turn_context", "event_msg"):  # event_msg: the UI's echo of items
            self.skipped[f"line:{kind}"] += 1

    def _session(self, meta: Mapping[str, Any]) -> None:
        """The first ``session_meta`` counts: a resumed session writes it again."""
        for key, name in _SESSION_KEYS.items():
            if isinstance(meta.get(key), str):
                self.session.setdefault(name, meta[key])
        if self.instructions is None:
            self.instructions = _instructions(meta.get("base_instructions"))

    def _item(self, item: Any) -> None:
        kind = str(item.get("type")) if isinstance(item, Mapping) else "not_an_object"
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
            if role == "user":
                self.users.append(text)
        else:
            self.skipped[f"message_role:{role}"] += 1

    def _compacted(self, payload: Mapping[str, Any]) -> None:
        """End the window; start the next from the history the compaction left (see the
        module's docstring)."""
        self.windows.append(self.messages())
        self.compactions += 1
        self.skipped["compacted_away"] += len(self.out)
        users, self.out, self.users = self.users, [], []
        if isinstance(history := payload.get("replacement_history"), list):
            self.system = []
            for item in history:
                self._item(item)
            self._flush()
            return
        for text in users:
            self._message({"role": "user", "content": text})
        if isinstance(summary := payload.get("message"), str) and summary:
            self.out.append(Message(role="user", content=summary))

    def _flush(self) -> None:
        if self.texts or self.calls:
            content = "\n".join(self.texts)
            self.out.append(
                Message(role="assistant", content=content, tool_calls=tuple(self.calls))
            )
            self.texts, self.calls = [], []

    def messages(self) -> list[Message]:
        self._flush()
        system = [self.instructions] if self.instructions else []
        system += self.system
        head = [Message(role="system", content="\n\n".join(system))] if system else []
        return head + self.out

    def meta(self) -> dict[str, Any]:
        counts = {"compactions": self.compactions} if self.compactions else {}
        return {**self.session, **counts, "skipped": dict(sorted(self.skipped.items()))}


def _instructions(value: Any) -> str | None:
    """``base_instructions``: text, or ``{"text": ...}`` in newer CLIs."""
    if isinstance(value, Mapping):
        value = value.get("text")
    return value if isinstance(value, str) and value else None


def _args(item: Mapping[str, Any]) -> dict[str, Any]:
    """Function arguments are a JSON object in a string; a custom tool's input is free text."""
    kind = item.get("type")
    if kind == "apply_patch_call":
        return patch_arguments(item.get("operation"))
    if kind == "custom_tool_call":
        raw = item.get("input")
        return {"input": raw} if isinstance(raw, str) else {}
    raw = item.get("arguments", item.get("action"))
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            parsed = None
        return dict(parsed) if isinstance(parsed, Mapping) else {"input": raw}
    return dict(raw) if isinstance(raw, Mapping) else {}


def _output(output: Any) -> Content:
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping) and isinstance(text := output.get("content"), str):
        return text
    if isinstance(output, list):
        return _parts(output)
    return json.dumps(output, ensure_ascii=False)


def _parts(parts: list[Any]) -> Content:
    """An output given as a list of parts: their text joined as the model read it (code mode
    writes a header part ending in a newline, then the cell's output), or, with parts that are
    not text among them, blocks: each run of text parts one text block, the others as they are."""
    blocks: list[Mapping[str, Any]] = []
    for part in parts:
        text = part.get("text") if isinstance(part, Mapping) else part
        if not isinstance(text, str):
            blocks.append(part if isinstance(part, Mapping) else {"type": "unknown"})
        elif blocks and _is_text(blocks[-1]):
            blocks[-1] = {"type": "text", "text": blocks[-1]["text"] + text}
        else:
            blocks.append({"type": "text", "text": text})
    if all(_is_text(block) for block in blocks):
        return "".join(block["text"] for block in blocks)
    return tuple(blocks)


def _is_text(block: Mapping[str, Any]) -> bool:
    return block.get("type") == "text" and isinstance(block.get("text"), str)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(b["text"]) for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str)
    )
