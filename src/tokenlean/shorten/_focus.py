"""Where in a window of a file the call looked: the line it moved a viewer to, or the lines
its edit wrote.

Some file tools answer with a window of their own choosing: SWE-agent's ``open f 1474``
shows a hundred lines around line 1474, and its ``edit 12:14`` echoes a hundred lines around
the text it wrote. The agent named one line, or wrote a few; the rest of the window is the
tool's padding, and on SWE-agent's runs what the agent went on to use lay near what it named
(see ``ShortenSettings.view_context_lines``). Such a window keeps ``view_context_lines`` on
each side of its focus (and of the lines a viewer marks selected), every line that carries no
line number (the header, the footer, an error) and, when no line of it can be placed, all of
it. A search-and-replace edit's usual echo, a few lines on each side, is never cut.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenlean.shorten._calls import command_of
from tokenlean.shorten._code import number_prefix

__all__ = ["Focus", "focus_of"]

#: SWE-agent's viewer moved to a line: ``open path 1474``, ``goto 1474``.
_MOVE = re.compile(r"\s*(?:open\s+\S+|goto)\s+([0-9]{1,9})\s*")
#: A line number given as text.
_NUMBER = re.compile(r"[0-9]{1,9}")
#: The lines around a viewer's selection: ``<<<<< START CURSOR >>>>>``.
_CURSOR = re.compile(r"<{3,} *(?:START|END) CURSOR *>{3,}")
#: An editor's command whose text follows on the next lines: ``edit 12:14``, ``insert 12``,
#: ``edit`` (SWE-agent's cursor mode: the selected lines are replaced).
_EDIT_COMMAND = re.compile(r"(?:edit|insert)(?:\s+\d+(?::\d+)?)?")
#: An edit tool's arguments holding the text it wrote (compared in lower case).
_TEXT_ARGS = frozenset(
    {"replace", "replacement", "replacement_text", "new_str", "new_string", "text", "insert_text"}
)
#: A viewer tool's arguments: one file and the line to show (SWE-agent's function-calling
#: ``open``), compared in lower case.
_LINE_ARGS = frozenset({"line_number", "line"})
_PATH_ARGS = frozenset({"path", "file", "file_path", "filepath", "filename"})
#: Written lines shorter than this (``else:``, ``)``) place nothing: they are everywhere.
_MIN_CHARS = 8
#: An edit's text read for its lines: at most this many characters.
_WRITTEN_MAX_CHARS = 100_000


@dataclass(frozen=True, slots=True)
class Focus:
    """The line a viewer was moved to (``line``) or the stripped lines an edit wrote
    (``written``)."""

    line: int | None = None
    written: frozenset[str] = frozenset()

    def outside(self, items: Sequence[str], context: int) -> list[int]:
        """The indexes of ``items`` (a numbered view's lines, numbers included) further than
        ``context`` lines of the file from every focused line; none when the focus is not
        in the window. An edit's focus is the whole stretch from the first line of its text
        the window shows to the last: what lies between is what it wrote, even when the
        middle of its text is all the call still holds (its input cut once it ran, as the
        model sees it and as an adapter replanning the stored history reads it)."""
        numbered = [(i, number_prefix(line)) for i, line in enumerate(items)]
        placed = [(i, found[0], items[i][found[1] :].strip()) for i, found in numbered if found]
        if self.line is not None:
            numbers = {n for _, n, _ in placed}
            anchors = [self.line] if self.line in numbers else []
        else:  # an edit writes one stretch: from the first line of its text shown to the last
            found = [n for _, n, text in placed if text in self.written]
            anchors = list(range(min(found), max(found) + 1)) if found else []
        anchors += _selected(items)
        if not anchors:
            return []
        anchors.sort()
        return [i for i, n, _ in placed if _distance(anchors, n) > context]


def _selected(items: Sequence[str]) -> list[int]:
    """The numbers of the lines a viewer marks as selected (SWE-agent's cursors: its next
    edit replaces them), so the window keeps them and what is around them too."""
    out: list[int] = []
    inside = False
    for line in items:
        if _CURSOR.search(line[:80]):
            inside = "START" in line
        elif inside and (found := number_prefix(line)) is not None:
            out.append(found[0])
    return out


def _distance(anchors: list[int], number: int) -> int:
    """How far ``number`` is from the nearest of the sorted ``anchors``."""
    k = bisect_left(anchors, number)
    near = anchors[max(0, k - 1) : k + 1]
    return min(abs(number - a) for a in near)


def focus_of(query: str | Mapping[str, Any] | None) -> Focus | None:
    """The focus of a call that wrote text into a file or moved a viewer to a line; ``None``
    for any other call (its output keeps what it kept before)."""
    if not isinstance(query, Mapping):
        return None
    texts = _written(query)
    if texts:
        lines = {line.strip() for text in texts for line in text[:_WRITTEN_MAX_CHARS].split("\n")}
        written = frozenset(line for line in lines if len(line) >= _MIN_CHARS)
        return Focus(written=written) if written else None
    line = _moved_to(query)
    return Focus(line=line) if line is not None else None


def _written(query: Mapping[str, Any]) -> list[str]:
    """The text an edit wrote: what follows an editor command's first line (SWE-agent's
    ``edit 12:14``, ``edit`` at its cursors, ``insert 12``), or an edit tool's new text."""
    command = command_of(query)
    head, _, rest = command.partition("\n")
    out = [rest] if _EDIT_COMMAND.fullmatch(head.strip()) else []
    keys = {str(key).lower(): value for key, value in query.items()}
    return out + [
        value for key, value in keys.items() if key in _TEXT_ARGS and isinstance(value, str)
    ]


def _moved_to(query: Mapping[str, Any]) -> int | None:
    """The line a viewer call moved to: ``open f N``/``goto N``, or a file and a line."""
    match = _MOVE.fullmatch(command_of(query)[:200])
    if match is not None:
        return int(match.group(1))
    keys = {str(key).lower(): value for key, value in query.items()}
    lines = [keys[key] for key in _LINE_ARGS.intersection(keys)]
    paths = [keys[key] for key in _PATH_ARGS.intersection(keys)]
    if len(lines) != 1 or len(paths) != 1 or len(keys) != 2 or not isinstance(paths[0], str):
        return None
    value = lines[0]
    if isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
