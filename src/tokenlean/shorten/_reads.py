"""Whether a call printed a file as it is, or a stretch of one, and how many lines it asked for:
judged from its arguments alone (see :mod:`._calls` for the shell words they are read from)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from tokenlean._caches import byte_bounded
from tokenlean.shorten._calls import SEPARATORS, command_of, script_words, shell_text, split_at
from tokenlean.shorten._parts import CompoundRead, compound_read, line_count, sed_span

__all__ = ["FileRead", "file_read", "requested_lines"]

#: Programs that print a file, or some of its lines, as they are.
_READERS = frozenset(
    {"cat", "nl", "head", "tail", "sed", "bat", "batcat", "type", "get-content", "gc"}
)
#: What a read may be piped through and stay a read of those lines.
_LINE_FILTERS = frozenset({"cat", "nl", "head", "tail", "sed"})
#: Readers that print a stretch of a file rather than all of it.
_RANGE_READERS = frozenset({"sed", "head", "tail"})
FileRead = Literal["range", "file"]


def file_read(query: str | Mapping[str, Any] | None) -> FileRead | None:
    """Whether the call printed a file as it is (``"file"``: ``cat f``, ``nl -ba f``,
    ``Get-Content f``) or a stretch of one (``"range"``: ``sed -n '1,200p' f``, ``head -n 80 f``,
    ``nl -ba f | sed -n '40,90p'``), perhaps after a ``cd``; ``None`` for anything else. The
    agent asked for exactly that text, as it does with a file view's line numbers. A file tool's
    call (its arguments one file path, perhaps a line range: an MCP ``read_file``, Pi's ``read``)
    reads the same way, and so does a file editor's ``view`` (Anthropic's text editor tool,
    OpenHands' and SWE-agent's ``str_replace_editor``: a path, perhaps a ``view_range``), and
    gemini-cli's ``read_many_files`` (a list of paths and globs: ``"file"``)."""
    if isinstance(query, Mapping) and (tool := _tool_args(query)) is not None:
        return _read_tool(tool)
    single = _single_read(query)
    if single is not None:
        return single
    compound = _compound(shell_text(query))
    return compound.read if compound is not None else None


def _single_read(query: str | Mapping[str, Any] | None) -> FileRead | None:
    """A read by one reader per statement (``cd x && cat a.py``, ``nl -ba f | sed -n '1,9p'``)."""
    programs: set[str] = set()
    for statement in split_at(script_words(query), SEPARATORS):
        stages = split_at(statement, frozenset({"|"}))
        names = [stage[0].lower() if stage else "" for stage in stages]
        if names == ["cd"]:
            continue
        if names[0] not in _READERS or not _names_a_file(stages[0]):
            return None
        if not _LINE_FILTERS.issuperset(names[1:]):
            return None
        programs.update(names)
    if not programs:
        return None
    return "range" if programs & _RANGE_READERS else "file"


def requested_lines(query: str | Mapping[str, Any] | None) -> int | None:
    """How many lines a ranged read asked for (``sed -n '1,200p' f``: 200; ``head -n 80 f``: 80;
    ``head -n 300 f | tail -n 100``: 100; a read tool's ``limit``); ``None`` when that is not
    said in so many lines (``sed -n '40,$p'``, a script ``sed`` reads otherwise) or when the
    call printed several things (``sed -n '1,200p' a; sed -n '1,200p' b``: stretches chosen
    one by one, not a file read through a page at a time)."""
    if file_read(query) != "range":
        return None
    if isinstance(query, Mapping) and (tool := _tool_args(query)) is not None:
        return _tool_span(tool)
    if _single_read(query) is None:
        compound = _compound(shell_text(query))
        return compound.span if compound is not None else None
    statements = [
        s for s in split_at(script_words(query), SEPARATORS) if s and s[0].lower() != "cd"
    ]
    if len(statements) != 1:
        return None
    spans: list[int] = []
    for statement in statements:
        for stage in split_at(statement, frozenset({"|"})):
            name = stage[0].lower() if stage else ""
            span = _sed_span(stage) if name == "sed" else line_count(stage)
            if name in _RANGE_READERS:
                if span is None:
                    return None
                spans.append(span)
    return min(spans) if spans else None


@byte_bounded(max_entries=256)
def _compound(command: str) -> CompoundRead | None:
    """:func:`~tokenlean.shorten._parts.compound_read`, memoized: a call is judged by several
    questions, each splitting its command."""
    return compound_read(command) if command else None


def _sed_span(words: Sequence[str]) -> int | None:
    """The lines ``sed -n 'A,Bp'`` prints; ``None`` for any other script."""
    scripts = [word for word in words[1:] if not word.startswith("-")][:1]
    return sed_span(scripts[0]) if scripts and "-n" in words else None


def _tool_args(query: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A file tool's arguments (an editor's ``view`` without its command word); ``None`` for a
    call that ran a command."""
    if query.get("command") == "view":
        return {key: value for key, value in query.items() if key != "command"}
    return None if command_of(query) else query


def _tool_span(args: Mapping[str, Any]) -> int | None:
    """The lines a file tool's arguments ask for: ``limit``, its first and last line, or an
    editor's ``view_range`` (``[a, b]``; ``b`` of -1 is the file's end, so not said)."""
    keys = {str(key).lower(): value for key, value in args.items()}
    limit = _count(keys.get("limit"))
    if limit:
        return limit
    span = keys.get("view_range")
    if isinstance(span, (list, tuple)) and len(span) == 2:
        start, end = _count(span[0]), _count(span[1])
        return end - start + 1 if start and end >= start else None
    for first, last in (("start_line", "end_line"), ("line_start", "line_end")):
        start, end = _count(keys.get(first)), _count(keys.get(last))
        if start and end:
            return end - start + 1 if end >= start else None
    return None


def _count(value: object) -> int:
    """``value`` when it is a positive int (not a bool), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


#: A file tool's arguments: one of these names the file (compared in lower case, so
#: ``filePath`` too), the others say which lines.
_PATH_ARGS = frozenset(
    {"path", "file_path", "filepath", "filename", "file", "target_file", "absolute_path"}
)
_RANGE_ARGS = frozenset(
    {
        "offset", "limit", "head", "tail", "start_line", "end_line", "line_start", "line_end",
        "view_range",
    }
)  # fmt: skip
#: Arguments that change nothing in what a read shows (OpenHands' editor asks every call for a
#: ``security_risk`` label).
_OTHER_READ_ARGS = frozenset({"encoding", "security_risk"})
#: gemini-cli's ``read_many_files``: files named or matched by globs, printed one after another
#: (``paths`` in its early releases, ``include`` since), and what narrows that set.
_MANY_PATH_ARGS = frozenset({"paths", "include"})
_MANY_READ_ARGS = _MANY_PATH_ARGS | frozenset(
    {"exclude", "recursive", "usedefaultexcludes", "file_filtering_options"}
)


def _read_tool(args: Mapping[str, Any]) -> FileRead | None:
    """``"file"`` or ``"range"`` when ``args`` are a file tool's: one path with a file name
    extension (a folder is listed, not read), line bounds and nothing else; or files named by
    a list of paths and globs, and what narrows them (``"file"``: they are printed whole)."""
    keys = {str(key).lower(): value for key, value in args.items()}
    many = [keys[key] for key in _MANY_PATH_ARGS.intersection(keys)]
    if many and _MANY_READ_ARGS.issuperset(keys):
        names = [value for value in many if isinstance(value, list) and value]
        valid = len(names) == len(many) and all(isinstance(n, str) for v in names for n in v)
        return "file" if valid else None
    paths = [value for key, value in keys.items() if key in _PATH_ARGS]
    if len(paths) != 1 or not isinstance(paths[0], str) or not _READ_ARGS.issuperset(keys):
        return None
    name = paths[0].rstrip().rpartition("/")[2]
    if "." not in name.strip("."):
        return None
    return "range" if _RANGE_ARGS.intersection(keys) else "file"


_READ_ARGS = _PATH_ARGS | _RANGE_ARGS | _OTHER_READ_ARGS


def _names_a_file(words: Sequence[str]) -> bool:
    """A reader's words name something to read, and it changes nothing (no ``sed -i``): a word
    after the program that is no option, line count or ``sed`` script."""
    if words[0].lower() == "sed" and any(word.startswith("-i") for word in words):
        return False
    rest = [word for word in words[1:] if not word.startswith("-") and not word.isdigit()]
    if words[0].lower() == "sed":
        rest = rest[1:]  # the script ('1,200p') comes first
    return bool(rest)
