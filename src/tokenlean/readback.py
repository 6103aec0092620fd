"""How a marker tells the agent to get an original back: one small object given to the planner.

Every omission marker says how to read what it stands for back. How depends on the way in:

- :class:`ToolReadBack`: the agent has a retrieval tool (``read_original``, added by the
  LangChain middleware): markers name the tool, a handle and a line range.
- :class:`FileReadBack`: the agent reads files (a coding agent behind the proxy or an SDK
  wrapper): originals are files named by their content, and markers name the file and lines.

The planner (:mod:`tokenlean.pipeline`) asks the object for each original's handle, lays every
marker out with :attr:`ReadBack.tool` (so a text is cut at the same lines whichever way it came
in), and lets :meth:`ReadBack.finish` turn the markers of one shortened text into their final
words. Only the object that wrote a marker reads it again. ``None`` in place of an object, or a
:class:`ToolReadBack` naming no tool, means the agent has no way back (:func:`has_way_back`): a
result then leaves out only what the prompt itself still shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from tokenlean import checks
from tokenlean.store import (
    RETRIEVAL_TOOL,
    FolderOriginalStore,
    Original,
    OriginalStore,
    make_handle,
)

__all__ = [
    "NO_TOOL_READ_BACK",
    "TOOL_READ_BACK",
    "FileReadBack",
    "ReadBack",
    "ServedReadBack",
    "ToolReadBack",
    "has_way_back",
    "point_to_file",
]


@runtime_checkable
class ReadBack(Protocol):
    """How the agent reads an original back; see the module docstring."""

    @property
    def tool(self) -> str | None:
        """The tool name output markers are laid out with (``None``: the handle alone)."""
        ...

    def handle(self, kind: str, text: str, *names: str) -> str:
        """The handle of ``text`` (``kind``: ``"o"`` output, ``"i"`` input; ``names``: what
        names it in the transcript, a call id, or a call id and an argument's key)."""
        ...

    def finish(self, text: str, original: Original) -> str:
        """A shortened output's final text, from its markers as laid out."""
        ...

    def input_marker(
        self, omitted: int, first: int, handle: str, text: str, *, final: bool = True
    ) -> str:
        """The line standing for ``omitted`` lines of input ``text`` from line ``first`` on
        (``final``: in its final words; else as laid out, to judge whether the cut pays)."""
        ...

    def keep(self, original: Original, lines: str) -> Original:
        """What the store keeps for ``original``; ``lines`` is the text its markers count the
        lines of (a JSON envelope's text, unescaped; an input's text as it is)."""
        ...


@dataclass(frozen=True, slots=True)
class ToolReadBack:
    """Markers name ``tool`` (``None``: the agent has no such tool; markers name the handle)."""

    tool: str | None = RETRIEVAL_TOOL

    def __post_init__(self) -> None:
        if self.tool is not None:
            checks.identifier(self.tool, "tool")

    def handle(self, kind: str, text: str, *names: str) -> str:
        return make_handle(kind, *names, text)

    def finish(self, text: str, original: Original) -> str:
        return text

    def keep(self, original: Original, lines: str) -> Original:
        return original  # read_original reads line ranges the way the markers count them

    def input_marker(
        self, omitted: int, first: int, handle: str, text: str, *, final: bool = True
    ) -> str:
        how = f'{self.tool}("{handle}")' if self.tool else f'kept as "{handle}"'
        return (
            f"[... {omitted} lines of this input omitted after the call ran; {how} shows them ...]"
        )


@dataclass(frozen=True, slots=True)
class FileReadBack:
    """Originals are files in ``store``'s folder, named by their content alone.

    A name that depends only on the text lets any number of processes share the folder and
    keeps markers byte-identical from request to request. Output markers are laid out as a
    tool-reading agent's are (handles and :data:`~tokenlean.store.RETRIEVAL_TOOL`, so both cut
    the same lines) and finished to name the file and lines (:func:`point_to_file`); the file
    of an output holds the text its markers count lines of (a JSON envelope's text, unescaped).
    """

    store: FolderOriginalStore
    tool: str = field(default=RETRIEVAL_TOOL, init=False)

    def handle(self, kind: str, text: str, *names: str) -> str:
        return make_handle(kind, *names, text)  # as laid out; the file is named by content

    def path(self, text: str) -> Path:
        """The file that holds an original ``text``."""
        return self.store.path(make_handle("o", text))

    def finish(self, text: str, original: Original) -> str:
        return point_to_file(text, original.handle, str(self.path(original.text)))

    def keep(self, original: Original, lines: str) -> Original:
        return Original(make_handle("o", original.text), lines)

    def input_marker(
        self, omitted: int, first: int, handle: str, text: str, *, final: bool = True
    ) -> str:
        if not final:  # judged as a tool-less agent's marker is, whose cuts this one makes
            return ToolReadBack(None).input_marker(omitted, first, handle, text)
        return (
            f"[... {omitted} lines of this input omitted after the call ran; "
            f"full input: {self.path(text)} lines {first}-{first + omitted - 1} ...]"
        )


@dataclass(frozen=True, slots=True)
class ServedReadBack:
    """Originals kept as :class:`FileReadBack` keeps them (named by their content), and markers
    that name ``read_original`` with that handle instead of a path: for agents that read the
    originals through a tool served over ``store`` (``tokenlean mcp``, an MCP server), such as
    an agent on another machine than the proxy, where a path means nothing, or originals kept
    where there is no file at all (:class:`~tokenlean.redis_store.RedisOriginalStore`)."""

    store: OriginalStore
    tool: str = field(default=RETRIEVAL_TOOL, init=False)

    def handle(self, kind: str, text: str, *names: str) -> str:
        return make_handle(kind, *names, text)  # as laid out; kept under the content's handle

    def finish(self, text: str, original: Original) -> str:
        return name_handle(text, original.handle, make_handle("o", original.text))

    def keep(self, original: Original, lines: str) -> Original:
        return Original(make_handle("o", original.text), lines)

    def input_marker(
        self, omitted: int, first: int, handle: str, text: str, *, final: bool = True
    ) -> str:
        if not final:
            return ToolReadBack(None).input_marker(omitted, first, handle, text)
        lines = f"{first}-{first + omitted - 1}"
        return (
            f"[... {omitted} lines of this input omitted after the call ran; "
            f'{self.tool}("{make_handle("o", text)}", "{lines}") shows them ...]'
        )


def has_way_back(read_back: ReadBack | None) -> bool:
    """Whether markers laid out with ``read_back`` name a way the agent can read an original
    back (a tool in its request, or a file its own tools read): not when nothing is kept, nor
    when only a handle could be named."""
    return read_back is not None and read_back.tool is not None


#: The LangChain middleware's read-back: markers name ``read_original``.
TOOL_READ_BACK = ToolReadBack()
#: Originals are kept but the agent has no tool to read them: markers name the handle.
NO_TOOL_READ_BACK = ToolReadBack(None)


#: A marker hint as markers lay it out: ``read_original("<handle>", "a-b")``, its quotes escaped
#: inside JSON strings. Groups: the escape, the handle, the first and last line.
_HINT_SHAPE = r'{tool}\((\\?)"({handle})\1"(?:, \1"(\d+)(?:-(\d+))?\1")?\)'
#: Hints for any handle, compiled once: a pattern per handle cost a compile per shortened
#: result (about a millisecond each: a tenth of a cold 30 MB body's rewrite).
_HINT = re.compile(_HINT_SHAPE.format(tool=RETRIEVAL_TOOL, handle=r'[^"\\\s(),]+'))


def _sub_hints(text: str, handle: str, replace: Callable[[re.Match[str]], str]) -> str:
    """``text`` with each hint for ``handle`` replaced by ``replace(match)``; hints for other
    handles stay as they are."""
    if handle not in text:
        return text
    if _HINT.fullmatch(f'{RETRIEVAL_TOOL}("{handle}")') is None:  # a handle of another shape
        own = _HINT_SHAPE.format(tool=RETRIEVAL_TOOL, handle=re.escape(handle))
        return re.sub(own, replace, text)
    return _HINT.sub(lambda m: replace(m) if m[2] == handle else m[0], text)


def name_handle(text: str, handle: str, served: str) -> str:
    """``text`` with each marker hint for ``handle`` naming ``served`` instead."""
    return _sub_hints(text, handle, lambda m: m[0].replace(handle, served))


def point_to_file(text: str, handle: str, path: str) -> str:
    """``text`` with each ``read_original("<handle>", "a-b")`` marker hint pointing into ``path``.

    The first names the file (``full output: /path lines a-b``); later ones only give lines
    (``full output lines a-b``): a path costs about fifteen tokens, and a shortened result may
    have a dozen markers into the same file. Hints inside JSON strings have escaped quotes, and
    get an escaped path.
    """
    named = False

    def where(match: re.Match[str]) -> str:
        nonlocal named
        escaped = json.dumps(path, ensure_ascii=False)[1:-1] if match[1] else path
        head = "full output" if named else f"full output: {escaped}"
        named = True
        if match[3] is None:
            return head
        return f"{head} lines {match[3]}-{match[4]}" if match[4] else f"{head} line {match[3]}"

    return _sub_hints(text, handle, where)
