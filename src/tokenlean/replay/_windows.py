"""What every reader of an agent's session file answers: the messages of each context window
the session holds (a compaction starts the model over from a summary), and what it skipped."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from tokenlean.transcript import Message

__all__ = ["LineReader", "Windows", "read_lines"]

#: A reader's answer: the messages of each context window, and what it skipped on the way.
Windows = tuple[list[list[Message]], dict[str, Any]]


class LineReader(Protocol):
    """A reader of a session fed one line's object at a time, which closes a context window at
    each compaction (Claude Code's, Codex's)."""

    windows: list[list[Message]]

    def line(self, obj: Any) -> None: ...

    def messages(self) -> list[Message]: ...

    def meta(self) -> dict[str, Any]: ...


def read_lines(reader: LineReader, objects: Iterable[Any]) -> Windows:
    """The windows ``reader`` reads in ``objects``: those it closed, then the last one."""
    for obj in objects:
        reader.line(obj)
    return [*reader.windows, reader.messages()], reader.meta()
