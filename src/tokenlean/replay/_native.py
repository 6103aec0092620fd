"""Coding agents' own session files: Claude Code transcripts, Codex rollouts and gemini-cli
sessions, read as they are.

All are JSON Lines (gemini-cli's before 0.61: one JSON object). The format is told by content,
never by path: Codex lines carry a ``payload`` under a ``type`` such as ``session_meta`` or
``response_item``; Claude Code lines carry a ``message`` under ``type`` ``user`` / ``assistant``
with a ``sessionId``; gemini-cli's first line holds its ``sessionId`` and ``projectHash``. Lines
a reader does not understand are skipped and counted in ``meta["skipped"]``, never an error; the
tool calls and results are then paired up (:func:`repair_pairing`) so the run replays like a
recorded agent.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from tokenlean.transcript import Message

NativeFormat = Literal["claude_code", "codex", "gemini_cli"]

_CODEX_TYPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg"})
_CLAUDE_TYPES = frozenset({"user", "assistant"})
#: Shown as the result of a call whose result the session never recorded (interrupted tools).
MISSING_RESULT = "[no result recorded for this call]"


def read_jsonl(raw: str) -> list[Any] | None:
    """The objects of a JSON Lines text, or None when a non-blank line is not JSON."""
    out: list[Any] = []
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            return None
    return out


def native_format(objects: Sequence[Any]) -> NativeFormat | None:
    """Which agent wrote these lines, judged by the first lines that say so."""
    for obj in objects[:200]:
        if not isinstance(obj, Mapping):
            continue
        kind = obj.get("type")
        if isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str):
            return "gemini_cli"
        if kind in _CODEX_TYPES and isinstance(obj.get("payload"), Mapping):
            return "codex"
        message = obj.get("message")
        if kind in _CLAUDE_TYPES and isinstance(message, Mapping) and "sessionId" in obj:
            return "claude_code"
    return None


def read_native(objects: Sequence[Any], fmt: NativeFormat) -> tuple[list[Message], dict[str, Any]]:
    """The neutral messages of a session and what was skipped or repaired on the way."""
    if fmt == "codex":
        from tokenlean.replay._codex import read_codex as reader
    elif fmt == "gemini_cli":
        from tokenlean.replay._gemini_cli import read_gemini_cli as reader
    else:
        from tokenlean.replay._claude_code import read_claude_code as reader
    messages, meta = reader(objects)
    messages, repairs = repair_pairing(messages)
    meta["native_format"] = fmt
    meta["repaired"] = dict(repairs)
    return messages, meta


def repair_pairing(messages: Sequence[Message]) -> tuple[list[Message], Counter[str]]:
    """Make every tool result answer a call of the assistant turn before it, and every call
    answered before the conversation moves on.

    A result with no open call is dropped; a call left unanswered gets :data:`MISSING_RESULT`;
    a user message that arrived while calls were still open (typed while tools ran) waits until
    they are answered.
    """
    out: list[Message] = []
    waiting: list[Message] = []
    open_calls: dict[str, str] = {}
    repairs: Counter[str] = Counter()

    def close() -> None:
        for call_id, name in open_calls.items():
            out.append(
                Message(role="tool", content=MISSING_RESULT, tool_call_id=call_id, name=name)
            )
            repairs["missing_results_added"] += 1
        open_calls.clear()
        out.extend(waiting)
        waiting.clear()

    for message in messages:
        if message.role == "tool":
            if open_calls.pop(message.tool_call_id or "", None) is None:
                repairs["orphan_results_dropped"] += 1
                continue
            out.append(message)
            if not open_calls:
                close()
        elif message.role == "assistant" or not open_calls:
            close()
            out.append(message)
            open_calls.update({c.id: c.name for c in message.tool_calls})
        else:
            waiting.append(message)
            repairs["user_messages_moved_after_results"] += 1
    close()
    return out, repairs
