"""Omission markers: every gap says what was left out, how much, and how to get it back."""

from __future__ import annotations

from dataclasses import dataclass

from tokenlean import checks
from tokenlean.shorten.report import Reason

_WHAT: dict[str, str] = {
    "similar": "similar lines",
    "repeat": "repeats of the line above",
    "seen": "lines already shown earlier",
    "budget": "lines",
    "long-line": "chars",
    "caret": "caret lines (^^^)",
    "items": "similar items",
    "chars": "chars",
}


@dataclass(frozen=True, slots=True)
class Retrieval:
    """Where the original is kept: a handle, and the tool that reads it (if the agent has one)."""

    handle: str | None = None
    tool: str | None = None

    def __post_init__(self) -> None:
        if self.handle is not None:
            checks.text(self.handle, "handle", blank=False)
        if self.tool is not None:
            checks.identifier(self.tool, "tool")

    def hint(self, first: int | None = None, last: int | None = None) -> str:
        """How to get a stretch back, e.g. ``read_original("o1a2b3", "5-9")``."""
        if self.handle and self.tool:
            if first is None:
                return f'{self.tool}("{self.handle}")'
            span = f"{first}-{last}" if last is not None and last != first else f"{first}"
            return f'{self.tool}("{self.handle}", "{span}")'
        if self.handle:
            return f'the original is kept as "{self.handle}"'
        return ""


def line_marker(
    reason: Reason, count: int, first: int, last: int, retrieval: Retrieval, indent: str = ""
) -> str:
    """A marker line standing for ``count`` omitted lines ``first``..``last`` (1-based)."""
    what = _WHAT[reason]
    if count == 1 and what.endswith("lines"):
        what = what[:-1]
    span = f"line {first}" if first == last else f"lines {first}-{last}"
    if retrieval.tool and retrieval.handle:
        where = f"; {retrieval.hint(first, last)}"
    elif retrieval.handle:
        where = f' (output {span} of "{retrieval.handle}")'
    else:
        where = f" (input {span})"
    return f"{indent}[... {count} {what} omitted{where} ...]"


def inline_marker(count: int, line: int, retrieval: Retrieval) -> str:
    """An in-line marker standing for ``count`` characters cut out of line ``line``."""
    hint = retrieval.hint(line, line)
    tail = f"; {hint}" if hint else ""
    return f" [... {count} chars omitted{tail} ...] "


def note(reason: Reason, count: int, retrieval: Retrieval) -> str:
    """A closing note for omissions that have no place of their own (e.g. caret lines)."""
    hint = retrieval.hint()
    tail = f"; {hint}" if hint else ""
    what = _WHAT[reason].replace("lines", "line") if count == 1 else _WHAT[reason]
    return f"[... {count} {what} omitted{tail} ...]"


def item_marker(count: int, first: int, last: int, retrieval: Retrieval) -> str:
    """The text of a JSON string element standing for omitted array items."""
    hint = retrieval.hint()
    tail = f"; {hint}" if hint else ""
    return f"... {count} similar items omitted (indices {first}-{last}){tail} ..."


def string_marker(count: int, retrieval: Retrieval) -> str:
    """Appended to a JSON string that was cut short."""
    hint = retrieval.hint()
    tail = f"; {hint}" if hint else ""
    return f"... [{count} chars omitted{tail}]"
