"""OpenCode sessions (``opencode export <session>``: one JSON object) as neutral messages.

An export is ``{"info": {...}, "messages": [{"info": {...}, "parts": [...]}, ...]}``, the messages
in the order OpenCode loads them. They are read as OpenCode turns them into the model's messages
(``MessageV2.toModelMessages``): a ``user`` message's text parts (not those marked ``ignored``;
``synthetic`` ones, such as a file read in by an ``@`` mention, were sent too) are the user's
message, a ``compaction`` part is sent as "What did we do so far?" and a ``subtask`` part as "The
following tool was executed by the user". Each step of an ``assistant`` message (from a
``step-start`` part; OpenCode writes one message per step) is one assistant turn: its text and
the calls of its ``tool`` parts, each answered by its ``state``: the ``output`` of a completed
call, the ``error`` of a failed one (an error result; the output an interrupted call kept, when
it kept one), "[Tool execution was interrupted]" for a call still pending or running. An
assistant message that ended in an error is not sent unless it was aborted after it had said or
called something.

Left out and counted in ``meta["skipped"]``: reasoning (sent back only as the provider's own,
often encrypted, items: the neutral view has no place for it), files attached to a user message
or a tool result (images, PDFs), and the parts OpenCode keeps for itself (``step-finish``,
``patch``, ``snapshot``, ``retry``, ``agent`` ...). A tool output OpenCode pruned later
(``time.compacted``, sent from then on as "[Old tool result content cleared]") is read as the
model first read it, and counted as ``pruned_outputs``: the replay measures the conversation as it
grew. The system prompt is not in the export.

A user message with a ``compaction`` part that a finished summary answered (an assistant message
marked ``summary`` whose ``parentID`` it is) starts a new context window: OpenCode sends nothing
before it again. A sub-agent's session is an export of its own (``info.parentID``:
``meta["parent_session_id"]``). Any field of an unexpected JSON type reads as absent.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from tokenlean.replay._windows import Windows
from tokenlean.transcript import Message, ToolCall

__all__ = [
    "COMPACTION_PROMPT",
    "INTERRUPTED",
    "SUBTASK_PROMPT",
    "is_opencode_export",
    "read_opencode",
]

#: What OpenCode sends in place of a part that has no text of its own.
COMPACTION_PROMPT = "What did we do so far?"
SUBTASK_PROMPT = "The following tool was executed by the user"
INTERRUPTED = "[Tool execution was interrupted]"
_SESSION_KEYS = {"id": "session_id", "version": "opencode_version", "parentID": "parent_session_id"}


def is_opencode_export(obj: Mapping[str, Any]) -> bool:
    """An ``opencode export``: ``messages`` whose items are ``{"info": {...}, "parts": [...]}``."""
    messages = obj.get("messages")
    return isinstance(messages, list) and any(
        isinstance(m, Mapping)
        and isinstance(m.get("info"), Mapping)
        and isinstance(m.get("parts"), list)
        for m in messages[:20]
    )


def read_opencode(objects: Sequence[Any]) -> Windows:
    """Neutral messages of each context window of one OpenCode export, and counts of what was
    skipped."""
    exports = [o for o in objects if isinstance(o, Mapping) and is_opencode_export(o)]
    if not exports:
        return [], {"skipped": {"not_an_export": len(objects)}}
    reader = _Reader()
    reader.skipped["not_an_export"] += len(objects) - 1
    info = exports[0].get("info")
    for key, name in _SESSION_KEYS.items():
        if isinstance(info, Mapping) and _is_text(info.get(key)):
            reader.session[name] = info[key]
    messages = [m for m in exports[0]["messages"] if isinstance(m, Mapping)]
    reader.skipped["not_a_message"] += len(exports[0]["messages"]) - len(messages)
    starts = _window_starts(messages)
    for message in messages:
        if _text_or_none(_info(message).get("id")) in starts:
            reader.new_window()
        reader.message(message)
    return [*reader.windows, reader.out], reader.meta()


class _Reader:
    def __init__(self) -> None:
        self.out: list[Message] = []
        self.windows: list[list[Message]] = []
        self.call_ids: set[str] = set()
        self.skipped: Counter[str] = Counter()
        self.session: dict[str, Any] = {}

    def new_window(self) -> None:
        if self.out:
            self.windows.append(self.out)
            self.out, self.call_ids = [], set()

    def meta(self) -> dict[str, Any]:
        counts = {"compactions": len(self.windows)} if self.windows else {}
        skipped = {kind: n for kind, n in sorted(self.skipped.items()) if n}
        return {**self.session, **counts, "skipped": skipped}

    def message(self, message: Mapping[str, Any]) -> None:
        info, parts = _info(message), message.get("parts")
        parts = [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []
        role = info.get("role")
        if role == "user":
            self.user(parts)
        elif role == "assistant" and _sent(info, parts):
            if "model" not in self.session and (model := _model(info)) is not None:
                self.session["model"] = model
            self.assistant(parts)
        else:
            kind = f"assistant_error:{_error_name(info)}" if role == "assistant" else f"role:{role}"
            self.skipped[kind] += 1

    def user(self, parts: list[Mapping[str, Any]]) -> None:
        texts: list[str] = []
        for part in parts:
            kind = part.get("type")
            if kind == "text" and _truthy(part.get("ignored")):
                self.skipped["ignored_text"] += 1
            elif kind == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind in ("compaction", "subtask"):
                texts.append(COMPACTION_PROMPT if kind == "compaction" else SUBTASK_PROMPT)
            else:
                self.skipped[f"user_part:{kind}"] += 1
        if texts:
            self.out.append(Message(role="user", content="\n".join(texts)))
        else:
            self.skipped["empty_user_message"] += 1

    def assistant(self, parts: list[Mapping[str, Any]]) -> None:
        texts: list[str] = []
        calls: list[ToolCall] = []
        results: list[Message] = []
        for part in parts:
            kind = part.get("type")
            if kind == "step-start":
                self._turn(texts, calls, results)
                texts, calls, results = [], [], []
            elif kind == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif kind == "tool":
                self._tool(part, calls, results)
            else:
                self.skipped[f"assistant_part:{kind}"] += 1
        self._turn(texts, calls, results)

    def _turn(self, texts: list[str], calls: list[ToolCall], results: list[Message]) -> None:
        if not texts and not calls:
            return
        self.out.append(
            Message(role="assistant", content="\n".join(texts), tool_calls=tuple(calls))
        )
        self.out.extend(results)

    def _tool(self, part: Mapping[str, Any], calls: list[ToolCall], results: list[Message]) -> None:
        call_id, name, state = part.get("callID"), part.get("tool"), part.get("state")
        if not isinstance(call_id, str) or not isinstance(name, str) or not call_id or not name:
            self.skipped["tool_part_without_id_or_name"] += 1
            return
        if call_id in self.call_ids:  # the model is never sent one call twice
            self.skipped["repeated_call_id"] += 1
            return
        self.call_ids.add(call_id)
        state = state if isinstance(state, Mapping) else {}
        args = state.get("input")
        args = dict(args) if isinstance(args, Mapping) else {}
        calls.append(ToolCall(id=call_id, name=name, args=args))
        content, status = self._result(state)
        results.append(
            Message(role="tool", content=content, tool_call_id=call_id, name=name, status=status)
        )

    def _result(self, state: Mapping[str, Any]) -> tuple[str, Literal["error"] | None]:
        """What the model read as the call's result, and whether it was an error."""
        status, metadata = state.get("status"), state.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
        if isinstance(state.get("attachments"), list) and state["attachments"]:
            self.skipped["tool_attachments"] += 1
        if status == "completed":
            time = state.get("time")
            if isinstance(time, Mapping) and _truthy(time.get("compacted")):
                self.skipped["pruned_outputs"] += 1
            return _string(state.get("output")), None
        if status == "error":
            kept = metadata.get("output")
            if metadata.get("interrupted") is True and isinstance(kept, str):
                return kept, None
            return _string(state.get("error")), "error"
        return INTERRUPTED, "error"


def _window_starts(messages: Sequence[Mapping[str, Any]]) -> set[str]:
    """The ids of the user messages holding a ``compaction`` part that a finished summary
    answered."""
    summarized = {
        _text_or_none(info.get("parentID"))
        for info in map(_info, messages)
        if info.get("role") == "assistant"
        and info.get("summary") is True
        and _truthy(info.get("finish"))
        and not _truthy(info.get("error"))
    }
    return {
        info["id"]
        for message in messages
        if (info := _info(message)).get("role") == "user"
        and _is_text(info.get("id"))
        and info["id"] in summarized
        and any(isinstance(p, Mapping) and p.get("type") == "compaction" for p in _parts(message))
    }


def _sent(info: Mapping[str, Any], parts: list[Mapping[str, Any]]) -> bool:
    """An assistant message that ended in an error is sent only when it was aborted after it
    had said or called something."""
    if not _truthy(info.get("error")):
        return True
    said = any(p.get("type") not in ("step-start", "reasoning") for p in parts)
    return _error_name(info) == "MessageAbortedError" and said


def _error_name(info: Mapping[str, Any]) -> Any:
    error = info.get("error")
    return error.get("name") if isinstance(error, Mapping) else type(error).__name__


def _model(info: Mapping[str, Any]) -> str | None:
    provider, model = info.get("providerID"), info.get("modelID")
    if _is_text(model):
        return f"{provider}/{model}" if _is_text(provider) else str(model)
    return None


def _info(message: Mapping[str, Any]) -> Mapping[str, Any]:
    info = message.get("info")
    return info if isinstance(info, Mapping) else {}


def _parts(message: Mapping[str, Any]) -> list[Any]:
    parts = message.get("parts")
    return parts if isinstance(parts, list) else []


def _string(value: Any) -> str:
    """A text field as the model read it: text, else the value as JSON (absent: empty)."""
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def _truthy(value: Any) -> bool:
    """JavaScript's truth, which OpenCode tests fields with: an empty list or object is true."""
    return value is not None and value is not False and value != 0 and value != ""


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)
