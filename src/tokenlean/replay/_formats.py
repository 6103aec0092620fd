"""Load agent traces into neutral :class:`Trajectory` objects.

Supported, detected per file: tokenlean's neutral JSON (as in ``shared/data/trajectories``),
LangChain message dumps (``messages_to_dict``), OpenAI chat-completions message lists and
Anthropic Messages API message lists (optionally wrapped as ``{"system": ..., "messages": [...]}``),
and coding agents' own session files: Claude Code transcripts, Codex rollouts, gemini-cli
sessions and OpenCode exports (``_native``); a list of messages is read by ``_message_lists``.
A session file the agent compacted holds one run per context window (:func:`load_trajectories`).
Anything malformed raises :class:`TrajectoryFormatError` naming the file and the position.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tokenlean.replay._message_lists import (
    Json,
    TrajectoryFormatError,
    message_sequence_problem,
    read_messages,
)
from tokenlean.replay._native import (
    NativeFormat,
    native_format,
    read_jsonl,
    read_native,
    stream_session,
)
from tokenlean.transcript import Message

__all__ = [
    "Trajectory",
    "TrajectoryFormatError",
    "load_trajectories",
    "load_trajectory",
    "message_sequence_problem",
    "parse_trajectory",
    "session_name",
]


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
    messages = read_messages(items, system, source=source, where=where)
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
