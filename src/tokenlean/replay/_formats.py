"""Load agent traces into neutral :class:`Trajectory` objects.

Supported, detected per file: tokenlean's neutral JSON (as in ``shared/data/trajectories``),
LangChain message dumps (``messages_to_dict``), OpenAI chat-completions message lists and
Anthropic Messages API message lists (optionally wrapped as ``{"system": ..., "messages": [...]}``),
and coding agents' own session files: Claude Code transcripts, Codex rollouts, gemini-cli
sessions and OpenCode exports (``_native``). A session file the agent compacted holds one run per
context window (:func:`load_trajectories`).
Anything malformed raises :class:`TrajectoryFormatError` naming the file and the position.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from tokenlean.replay._native import (
    NativeFormat,
    native_format,
    read_jsonl,
    read_native,
    stream_session,
)
from tokenlean.transcript import Message, ToolCall

Json = Any


class TrajectoryFormatError(ValueError):
    """A trace file that cannot be read; the message names the file and the position."""

    def __init__(self, source: str, position: str, problem: str) -> None:
        super().__init__(f"{source}: {position}: {problem}")
        self.source = source
        self.position = position
        self.problem = problem


@dataclass(frozen=True)
class Trajectory:
    """A recorded agent run: its messages, where it came from and how it ended.

    ``source`` is the run's provenance (``owner/repo@commit:path`` in the neutral format, else the
    file it was read from); ``source_name`` names the group of runs it is reported with, by
    default the folder the file sits in (``shared/data/trajectories/<source_name>/<run>.json``).
    """

    id: str
    messages: tuple[Message, ...]
    source: str = ""
    source_name: str = ""
    license: str = ""
    outcome: str = ""
    resolved: bool | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


def load_trajectory(path: str | Path, *, source_name: str | None = None) -> Trajectory:
    """Read one trace file in any supported format: its last context window when it is a
    session the agent compacted (the history the agent resumes from; :func:`load_trajectories`
    gives every window).

    ``source_name`` defaults to the name of the file's folder (the layout of the shared data).
    """
    return load_trajectories(path, source_name=source_name)[-1]


def load_trajectories(path: str | Path, *, source_name: str | None = None) -> list[Trajectory]:
    """Every run a trace file holds: one, or one per context window of a session the agent
    compacted, in order, with ids ``<file>#w1``, ``<file>#w2`` ... (:func:`session_name` gives
    the file's back).
    """
    path = Path(path)
    name = str(path)
    group = path.resolve().parent.name if source_name is None else source_name
    try:
        streamed = _streamed(path, group)
        raw = path.read_text(encoding="utf-8") if streamed is None else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise TrajectoryFormatError(name, "file", str(exc)) from None
    if streamed is not None:
        return streamed
    bad: list[tuple[int, str]] = []
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        data, bad = _json_lines(raw, name, exc)
    lines = data if isinstance(data, list) else [data]
    if (fmt := native_format(lines)) is not None:
        found = _native_trajectories(lines, fmt, source=name, default_id=path.stem, group=group)
        return [replace(t, meta={**t.meta, "bad_lines": bad}) if bad else t for t in found]
    return [parse_trajectory(data, source=name, default_id=path.stem, source_name=group)]


def _streamed(path: Path, group: str) -> list[Trajectory] | None:
    """The runs of an agent's JSON Lines session, read line by line; None for other files."""
    with path.open(encoding="utf-8") as file:
        session = stream_session(file)
        if session is None:
            return None
        fmt, lines, stream = session
        name = str(path)
        found = _native_trajectories(lines, fmt, source=name, default_id=path.stem, group=group)
    bad = stream.bad
    return [replace(t, meta={**t.meta, "bad_lines": bad}) if bad else t for t in found]


NOT_A_SESSION = "JSON lines, but not a Claude Code, Codex or gemini-cli session"


def _json_lines(
    raw: str, name: str, exc: json.JSONDecodeError
) -> tuple[list[Any], list[tuple[int, str]]]:
    """A text that is not one JSON document, read as a session's JSON Lines: the lines that
    are JSON and where the others are (a session still being written ends in a line cut
    short; it is read all the same). Not a session: the error names the first bad line of a
    text of JSON lines, else where the document broke."""
    lines = read_jsonl(raw)
    if lines.objects and native_format(lines.objects) is not None:
        return lines.objects, lines.bad
    records = sum(isinstance(o, dict) for o in lines.objects)
    if lines.bad and records >= len(lines.bad):  # JSON lines, most of them whole
        number, problem = lines.bad[0]
        raise TrajectoryFormatError(name, f"line {number}", f"invalid JSON: {problem}") from None
    if records > 1 and not lines.bad:
        raise TrajectoryFormatError(name, "lines", NOT_A_SESSION) from None
    position = f"line {exc.lineno} column {exc.colno}"
    raise TrajectoryFormatError(name, position, f"invalid JSON: {exc.msg}") from None


def _native_trajectories(
    lines: Iterable[Json], fmt: NativeFormat, *, source: str, default_id: str, group: str
) -> list[Trajectory]:
    windows = [(m, meta) for m, meta in read_native(lines, fmt) if m]
    if not windows:
        raise TrajectoryFormatError(source, fmt, "no messages in this session")
    return [
        Trajectory(
            id=f"{default_id}#w{meta['window']}" if "window" in meta else default_id,
            messages=tuple(messages),
            source=source,
            source_name=group,
            meta=meta,
        )
        for messages, meta in windows
    ]


def session_name(trajectory: Trajectory) -> str:
    """The session a run belongs to: its id, without the ``#wN`` of a context window (a
    sub-agent's transcript is labelled so)."""
    window = trajectory.meta.get("window")
    name = trajectory.id.removesuffix(f"#w{window}") if window is not None else trajectory.id
    return f"{name} (sub-agent)" if trajectory.meta.get("subagent") else name


def parse_trajectory(
    data: Json, *, source: str = "<data>", default_id: str = "trace", source_name: str = ""
) -> Trajectory:
    """Build a :class:`Trajectory` from already-decoded JSON in any supported format."""
    system: Json = None
    header: Mapping[str, Any] = {}
    if isinstance(data, Mapping):
        header = data
        items, system = data.get("messages"), data.get("system")
        where = "messages"
    else:
        items, where = data, "$"
    if not isinstance(items, list):
        raise TrajectoryFormatError(source, where, "expected a list of messages")
    messages = _Reader(source, where).read(items, system)
    if not messages:
        raise TrajectoryFormatError(source, where, "no messages")
    resolved = header.get("resolved")
    return Trajectory(
        id=str(header.get("id") or default_id),
        messages=tuple(messages),
        source=str(header.get("source") or source),
        source_name=source_name,
        license=str(header.get("license") or ""),
        outcome=str(header.get("outcome") or ""),
        resolved=resolved if isinstance(resolved, bool) else None,
        meta=meta if isinstance(meta := header.get("meta"), Mapping) else {},
    )


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
