"""Coding agents' own session files: Claude Code transcripts, Codex rollouts, gemini-cli sessions
and OpenCode exports, read as they are.

Most are JSON Lines (gemini-cli's before 0.61 and OpenCode's ``opencode export``: one JSON
object). The format is told by content, never by path: Codex lines carry a ``payload`` under a
``type`` such as ``session_meta`` or ``response_item``; Claude Code lines carry a ``message``
under ``type`` ``user`` / ``assistant`` with a ``sessionId``; gemini-cli's first line holds its
``sessionId`` and ``projectHash``; an OpenCode export holds ``messages`` of ``{"info", "parts"}``.
Lines a reader does not understand are skipped and counted in ``meta["skipped"]``, never an
error; the tool calls and results are then paired up (:func:`repair_pairing`) so the run replays
like a recorded agent.

A session the agent compacted is several context windows: each compaction started the model
over from a summary. Each window is read as its own run (:func:`read_native`), so the whole
session is measured, not only what the model was sent after its last compaction.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, Literal

from tokenlean.replay._claude_code import read_claude_code
from tokenlean.replay._codex import read_codex
from tokenlean.replay._gemini_cli import read_gemini_cli
from tokenlean.replay._opencode import is_opencode_export, read_opencode
from tokenlean.replay._windows import Windows
from tokenlean.transcript import Message

__all__ = [
    "CUT_SHORT",
    "MISSING_RESULT",
    "JsonLines",
    "LineStream",
    "NativeFormat",
    "native_format",
    "read_jsonl",
    "read_native",
    "repair_pairing",
    "stream_session",
]

NativeFormat = Literal["claude_code", "codex", "gemini_cli", "opencode"]
#: Why the last line of a file is not JSON when it has no newline yet.
CUT_SHORT = "cut short (still being written?)"


_CODEX_TYPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg"})
_CLAUDE_TYPES = frozenset({"user", "assistant"})
#: Shown as the result of a call whose result the session never recorded (interrupted tools).
MISSING_RESULT = "[no result recorded for this call]"


@dataclass(frozen=True, slots=True)
class JsonLines:
    """The objects of a JSON Lines text, and the lines that are not JSON: ``(line number,
    what is wrong)``, 1-based. A session still being written ends in a line cut short."""

    objects: list[Any]
    bad: list[tuple[int, str]]


def read_jsonl(raw: str) -> JsonLines:
    """Every line of a JSON Lines text that is JSON, and where the others are (blank lines
    are neither)."""
    out: list[Any] = []
    bad: list[tuple[int, str]] = []
    lines = raw.splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            last = number == len(lines) and not raw.endswith("\n")
            bad.append((number, CUT_SHORT if last else exc.msg))
    return JsonLines(out, bad)


class LineStream:
    """The objects of a JSON Lines file read one line at a time, so that its text and its
    parsed lines are never held whole (an 84 MB session parses to gigabytes), and the lines
    that are not JSON, filled in as they are met (``(line number, what is wrong)``, 1-based).

    Only the last line read lacks its newline: cut short when it is no JSON, a file still being
    written; what is appended while it is read is read too, up to its last whole line.
    """

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = enumerate(lines, 1)
        self.bad: list[tuple[int, str]] = []

    def __iter__(self) -> Iterator[Any]:
        for number, line in self._lines:
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                self.bad.append((number, exc.msg if line.endswith("\n") else CUT_SHORT))


def stream_session(file: IO[str]) -> tuple[NativeFormat, Iterator[Any], LineStream] | None:
    """An agent's JSON Lines session in ``file``, its format told by its first lines, and its
    objects streamed; None when ``file`` is something else (one JSON document, a first line
    that is no JSON, lines of no agent): the caller reads it whole."""
    stream = LineStream(file)
    objects = iter(stream)
    head = list(itertools.islice(objects, 200))
    if (stream.bad[:1] and stream.bad[0][0] == 1) or len(head) < 2:
        return None
    fmt = native_format(head)
    return (fmt, itertools.chain(head, objects), stream) if fmt is not None else None


def native_format(objects: Sequence[Any]) -> NativeFormat | None:
    """Which agent wrote these lines, judged by the first lines that say so."""
    for obj in objects[:200]:
        if not isinstance(obj, Mapping):
            continue
        if is_opencode_export(obj):
            return "opencode"
        kind = obj.get("type")
        if isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str):
            return "gemini_cli"
        if kind in _CODEX_TYPES and isinstance(obj.get("payload"), Mapping):
            return "codex"
        message = obj.get("message")
        if kind in _CLAUDE_TYPES and isinstance(message, Mapping) and "sessionId" in obj:
            return "claude_code"
    return None


def read_native(
    objects: Iterable[Any], fmt: NativeFormat
) -> list[tuple[list[Message], dict[str, Any]]]:
    """The neutral messages of each context window of a session (one window unless the agent
    compacted it), each with what was skipped or repaired on the way.

    Every window's meta holds the session's (``skipped`` counts the whole file); a session of
    several windows also gives each its ``window`` (from 1) and the number of ``windows``.
    """
    windows, meta = _reader(fmt)(objects)
    windows = windows or [[]]
    meta["native_format"] = fmt
    out = []
    for number, window in enumerate(windows, 1):
        messages, repairs = repair_pairing(window)
        counts = {"window": number, "windows": len(windows)} if len(windows) > 1 else {}
        out.append((messages, {**meta, **counts, "repaired": dict(repairs)}))
    return out


def _reader(fmt: NativeFormat) -> Callable[[Iterable[Any]], Windows]:
    """The reader of ``fmt`` (Claude Code's and Codex's take the lines one at a time; the
    others read their few records together)."""
    if fmt == "codex":
        return read_codex
    if fmt == "gemini_cli":
        return lambda objects: read_gemini_cli(list(objects))
    if fmt == "opencode":
        return lambda objects: read_opencode(list(objects))
    return read_claude_code


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
