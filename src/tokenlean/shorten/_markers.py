"""Omission markers: every gap says what was left out, how much, and how to get it back."""

from __future__ import annotations

from dataclasses import dataclass

from tokenlean import checks
from tokenlean.shorten._report import Reason

__all__ = [
    "Retrieval",
    "inline_marker",
    "item_marker",
    "line_marker",
    "note",
    "repeat_marker",
    "string_marker",
    "trace_marker",
]

_WHAT: dict[str, str] = {
    "similar": "similar lines",
    "repeat": "repeats of the line above",
    "seen": "lines already shown earlier",
    "budget": "lines",
    "long-line": "chars",
    "caret": "caret lines (^^^)",
    "items": "similar items",
    "chars": "chars",
    "trace": "traceback lines",
}


@dataclass(frozen=True, slots=True)
class Retrieval:
    """Where the original is kept: a handle, and the tool that reads it (if the agent has one).

    ``in_prompt``: nothing is kept and the agent has no way to read an original back, so only
    what the prompt itself still shows is left out (lines shown earlier, repeats, caret lines)
    and markers say no more than what they stand for.
    """

    handle: str | None = None
    tool: str | None = None
    in_prompt: bool = False

    def __post_init__(self) -> None:
        if self.handle is not None:
            checks.text(self.handle, "handle", blank=False)
        if self.tool is not None:
            checks.identifier(self.tool, "tool")

    def hint(self, first: int | None = None, last: int | None = None) -> str:
        """How to get a stretch back, e.g. ``read_original("o1a2b3", "5-9")``."""
        if self.in_prompt:
            return ""
        if self.handle and self.tool:
            if first is None:
                return f'{self.tool}("{self.handle}")'
            span = f"{first}-{last}" if last is not None and last != first else f"{first}"
            return f'{self.tool}("{self.handle}", "{span}")'
        if self.handle:
            return f'the original is kept as "{self.handle}"'
        return ""

    def tail(self, first: int | None = None, last: int | None = None, *, hinted: bool) -> str:
        """``"; <hint>"`` to end a marker with, or nothing (no hint, or ``hinted``: an earlier
        marker of the same text already says how to read the original back)."""
        hint = "" if hinted else self.hint(first, last)
        return f"; {hint}" if hint else ""


def line_marker(
    reason: Reason,
    count: int,
    first: int,
    last: int,
    retrieval: Retrieval,
    indent: str = "",
    *,
    hinted: bool = False,
) -> str:
    """A marker line standing for ``count`` omitted lines ``first``..``last`` (1-based).

    ``hinted``: an earlier marker of the same text already says how to read the original back
    (the tool and the handle), so this one only names its lines.
    """
    what = _WHAT[reason]
    if count == 1 and what.endswith("lines"):
        what = what[:-1]
    span = f"line {first}" if first == last else f"lines {first}-{last}"
    if retrieval.in_prompt:
        where = ""
    elif retrieval.tool and retrieval.handle and hinted:
        where = f" ({first}-{last})" if first != last else f" ({first})"
    elif retrieval.tool and retrieval.handle:
        where = f"; {retrieval.hint(first, last)}"
    elif retrieval.handle:
        where = f' (output {span} of "{retrieval.handle}")'
    else:
        where = f" (input {span})"
    return f"{indent}[... {count} {what} omitted{where} ...]"


def trace_marker(
    count: int,
    first: int,
    last: int,
    origin: tuple[int, int],
    copies: int,
    others: int,
    retrieval: Retrieval,
    indent: str = "",
    *,
    hinted: bool = False,
) -> str:
    """A marker for ``copies`` copies of traceback lines ``origin`` (1-based, shown above; 0:
    copies of several tracebacks there) and ``others`` lines between them, standing in lines
    ``first``..``last``."""
    tool = bool(retrieval.tool and retrieval.handle)
    where = f"; {retrieval.hint(first, last)}" if tool and not hinted else ""
    what = "a copy of" if copies == 1 else f"{copies} copies of" if copies else "copies of the"
    what += " lines" if copies else " tracebacks in lines"
    between = f" and {others} other line{'s' if others > 1 else ''}" if others else ""
    unit = "lines" if others else "traceback lines"
    return (
        f"{indent}[... {count} {unit} omitted: {what} {origin[0]}-{origin[1]} "
        f"above{between}{where} ...]"
    )


def inline_marker(count: int, line: int, retrieval: Retrieval, *, hinted: bool = False) -> str:
    """An in-line marker standing for ``count`` characters cut out of line ``line``."""
    return f" [... {count} chars omitted{retrieval.tail(line, line, hinted=hinted)} ...] "


def note(reason: Reason, count: int, retrieval: Retrieval) -> str:
    """A closing note for omissions that have no place of their own (e.g. caret lines)."""
    what = _WHAT[reason].replace("lines", "line") if count == 1 else _WHAT[reason]
    return f"[... {count} {what} omitted{retrieval.tail(hinted=False)} ...]"


def item_marker(
    count: int,
    first: int,
    last: int,
    retrieval: Retrieval,
    names: str = "",
    *,
    hinted: bool = False,
) -> str:
    """The text of a JSON string element standing for omitted array items; ``names`` lists
    their identifiers (e.g. ``number 646-651, 711``). ``hinted``: an earlier marker of the same
    text already says how to read the original back."""
    tail = retrieval.tail(hinted=hinted)
    span = f"index {first}" if first == last else f"indices {first}-{last}"
    which = f": {names}" if names else ""
    what = "similar item" if count == 1 else "similar items"
    return f"... {count} {what} omitted ({span}{which}){tail} ..."


def string_marker(
    count: int, retrieval: Retrieval, headings: str = "", *, hinted: bool = False
) -> str:
    """Appended to a JSON string that was cut short; ``headings`` are the markdown headings of
    the part cut (one per line), kept as an outline of it."""
    tail = retrieval.tail(hinted=hinted)
    if headings:
        return f"... [{count} chars omitted{tail}; its headings:]\n{headings}"
    return f"... [{count} chars omitted{tail}]"


def repeat_marker(tool: str, call_id: str) -> str:
    """What a result is sent as when it repeats, word for word, one the model was already shown
    whole (the earlier copy stays in the prompt, so nothing is lost)."""
    return f"[Same output as the earlier `{tool}` call {call_id}, word for word; not repeated.]"
