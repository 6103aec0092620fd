"""Telling content kinds apart, and looking inside mini-swe-agent's output envelope.

Each test reads at most the first :data:`SAMPLE_LINES` lines and each line's first
:data:`SCAN_CHARS` characters, with ``str`` methods or small anchored regexes (no nested
quantifiers), so telling kinds apart stays linear whatever the input.
"""

from __future__ import annotations

import gc
import json
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress, count, repeat
from operator import itemgetter, not_
from typing import Any, Literal

from tokenlean.shorten._code import looks_like_code, number_prefix
from tokenlean.shorten._text import is_sentence

_OPEN = "<output>\n"
_CLOSE = "</output>"
SAMPLE_LINES = 400
SCAN_CHARS = 300


@dataclass(frozen=True, slots=True)
class Envelope:
    """``text == head + body + tail``; ``body_line`` is the 0-based line where ``body`` starts."""

    head: str
    body: str
    tail: str
    body_line: int


def split_envelope(text: str) -> Envelope:
    """Separate ``<returncode>N</returncode>\\n<output>\\n ... </output>`` from the output."""
    if text.startswith("<returncode>"):
        at = text.find(_OPEN, 0, 200)
        end = text.rstrip().rfind(_CLOSE)
        if at >= 0 and end > at and text[end:].strip() == _CLOSE:
            start = at + len(_OPEN)
            return Envelope(text[:start], text[start:end], text[end:], text[:start].count("\n"))
    return Envelope("", text, "", 0)


def parse_json(body: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``body`` is one JSON object or array."""
    stripped = body.strip()
    if not stripped or stripped[0] not in "[{" or stripped[-1] not in "]}":
        return False, None
    try:
        with collector_paused(len(stripped) > PAUSE_GC_ABOVE):
            return True, json.loads(stripped)
    except (ValueError, RecursionError):
        return False, None


#: Longer JSON is parsed with the cyclic garbage collector paused: a 50 MB array makes millions
#: of containers, and the collections they trigger tripled the parse time (1.4 s, not 0.45 s).
PAUSE_GC_ABOVE = 1 << 20


@contextmanager
def collector_paused(pause: bool) -> Iterator[None]:
    """The garbage collector off for the block when ``pause`` (and it was on)."""
    was_on = pause and gc.isenabled()
    if was_on:
        gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def looks_like_source(body: str) -> bool:
    return looks_like_code(body.split("\n", SAMPLE_LINES)[:SAMPLE_LINES])


# -- file views with line numbers ----------------------------------------------------------------

#: Lines a file viewer adds around the numbered lines (SWE-agent's ``open``, ``grep`` groups).
_VIEW_DECOR = ("[File: ", "(", "<<<<<", "--", "[", "<system-reminder>", "</system-reminder>")


def numbered_view(items: Sequence[str]) -> list[int] | None:
    """The length of each line's line-number prefix when ``items`` is a file view with line
    numbers (``cat -n``, ``nl``, ``grep -n``, ``sed -n`` of a numbered file, Claude Code's
    ``Read`` with ``N→``, SWE-agent's ``open`` with ``N:``); ``None`` otherwise.

    Most non-blank lines must carry a number, and the numbers must mostly go up: a log whose
    lines start with counts does not qualify.
    """
    filled = [line for line in items[:SAMPLE_LINES] if line.strip()]
    numbered = rising = other = 0
    previous = -1
    for line in filled:
        found = number_prefix(line)
        if found is None:
            if not line.lstrip().startswith(_VIEW_DECOR):
                other += 1
                if 5 * other > len(filled):  # the rest cannot number four times as many
                    return None
            continue
        number, _ = found
        numbered += 1
        rising += number > previous
        previous = number
    if numbered < 3 or numbered < 4 * other or rising < 0.8 * numbered:
        return None
    return [found[1] if (found := number_prefix(line)) else 0 for line in items]


def strip_view(items: Sequence[str], prefixes: Sequence[int]) -> list[str]:
    """The lines of a numbered view without their numbers (what the file itself holds)."""
    return [line[cut:] for line, cut in zip(items, prefixes, strict=True)]


@lru_cache(maxsize=1024)
def view_content(text: str) -> str | None:
    """What a numbered file view shows of the file, its numbers left out (``None``: ``text`` is
    no such view). Memoized: a transcript's messages are read again on every call."""
    items = text.split("\n")
    prefixes = numbered_view(items)
    return "\n".join(strip_view(items, prefixes)) if prefixes else None


# -- documents, listings and pages ----------------------------------------------------------------

_UNDERLINE = frozenset("=-")
_PROSE_LINES = 30  # a few sentence lines: a snippet or a paragraph, not a log
_PARAGRAPH = 120  # mean characters per line of text written in paragraphs
_BULLETS = ("- ", "* ", "> ")


def is_heading(line: str, below: str = "") -> bool:
    """A markdown heading (``# x``), or a title underlined with ``===``/``---``."""
    stripped = line.strip()
    if stripped.startswith("#"):
        level = len(stripped) - len(stripped.lstrip("#"))
        return level <= 6 and stripped[level : level + 1] == " "
    under = below.strip()
    return bool(stripped) and len(under) >= 3 and set(under) <= _UNDERLINE


def is_table_row(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= 3 and stripped[0] == "|" and stripped[-1] == "|"


def looks_like_document(items: Sequence[str]) -> bool:
    """Markdown (headings, tables or bullets on many lines) or prose."""
    sample = [line for line in items[:SAMPLE_LINES] if line.strip()]
    if len(sample) < 3:
        return is_prose(sample)
    return _marked(sample) >= 0.15 * len(sample) or is_prose(sample)


def _marked(sample: Sequence[str]) -> int:
    """How many of the (non-blank) lines are table rows, headings or bullets. C-level passes
    pick the few lines that can be (starting with ``#``, ``|`` or a bullet, or above a line of
    ``=``/``-``); each of those is then checked."""
    stripped = list(map(str.strip, sample))
    bullets = map(str.startswith, map(str.lstrip, sample), repeat(_BULLETS))
    rules = map(not_, map(str.strip, stripped, repeat("=-")))  # lines of ``=`` and ``-`` only
    candidates = set(compress(count(), map(str.startswith, stripped, repeat(("#", "|")))))
    candidates.update(compress(count(), bullets))
    candidates.update(i - 1 for i in compress(count(), rules) if i)
    return sum(1 for i in candidates if _is_marked(sample, i))


def _is_marked(sample: Sequence[str], i: int) -> bool:
    line = sample[i]
    below = sample[i + 1] if i + 1 < len(sample) else ""
    return is_table_row(line) or is_heading(line, below) or line.lstrip().startswith(_BULLETS)


def is_prose(items: Sequence[str]) -> bool:
    """Mostly sentences in paragraphs (a search snippet, an article), whatever error words it
    holds. Many short sentence-like lines are more likely a log (``worker 3: fetched ...``)."""
    sample = [line for line in items[:SAMPLE_LINES] if line.strip()]
    if not sample or sum(map(is_sentence, sample)) < 0.6 * len(sample):
        return False
    return len(sample) <= _PROSE_LINES or sum(map(len, sample)) >= _PARAGRAPH * len(sample)


def is_listing(items: Sequence[str]) -> bool:
    """A listing of distinct paths (``find``, ``ls -R``, ``git ls-files``, a glob), or of
    entries one per line with a path last (``ls -l``, ``git status --short``, PowerShell's
    ``Get-ChildItem``)."""
    sample = [line.rstrip() for line in items[:SAMPLE_LINES] if line.strip()]
    if len(sample) < 5:
        return False
    paths = sum(1 for line in sample if _is_path(line.lstrip()) or _is_entry(line))
    return paths >= 0.8 * len(sample)


#: A long listing's entry: ``ls -l``'s mode and link count, or PowerShell's mode column and a
#: date; the name comes last.
_ENTRY = re.compile(r"[-dlbcps][-rwxsStT]{9}[.@+]?\s+\d+\s|[-d][-a][-r][-h][-s][-l]\s+\d")
#: ``git status --short``: two status letters (not both blank), a space, one path (quoted when
#: it holds a space, ``old -> new`` for a rename).
_STATUS = re.compile(r"(?! {2})[ MADRCUT?!]{2} (\S+(?: -> \S+)?|\".*\")$")


def _is_entry(line: str) -> bool:
    if len(line) > SCAN_CHARS:
        return False
    return _ENTRY.match(line) is not None or _STATUS.match(line) is not None


def _is_path(line: str) -> bool:
    if " " in line or len(line) > SCAN_CHARS:
        return line.endswith(":") and "/" in line and len(line) <= SCAN_CHARS  # ls -R heading
    return "/" in line or ("." in line.strip(".") and not line[:1].isdigit())


#: Roles of elements an agent can act on, in accessibility trees.
INTERACTIVE_ROLES = frozenset(
    {
        "button", "link", "textbox", "searchbox", "combobox", "checkbox", "radio", "switch",
        "slider", "spinbutton", "menuitem", "menuitemcheckbox", "menuitemradio", "option", "tab",
        "treeitem", "listbox", "textarea", "input", "select",
    }
)  # fmt: skip
_BID = re.compile(r"\s{0,80}(?:BID:\w{1,12} |\[\w{1,12}\] |- )(\w{1,24})")
_HTML_INTERACTIVE = ("<a ", "<button", "<input", "<select", "<option", "<textarea", "<form")


def page_role(line: str) -> str | None:
    """The role of an accessibility-tree line (``BID:a12 button Submit``, ``[a12] link x``,
    ``- button "Submit" [ref=e3]``), or ``None``."""
    match = _BID.match(line, 0, SCAN_CHARS)
    return match.group(1) if match else None


def is_interactive(line: str) -> bool:
    """An element the agent can act on: a tree line with a ``BID:``, or with an id and an
    interactive role, or an HTML form control or link."""
    stripped = line.lstrip()
    if stripped.startswith("<"):
        head = stripped[:SCAN_CHARS]
        return any(tag in head for tag in _HTML_INTERACTIVE)
    if stripped.startswith("BID:"):
        return True  # only elements the agent can target get a ``BID:`` (labels included)
    role = page_role(line)
    if role is None or role not in INTERACTIVE_ROLES:
        return False
    return stripped.startswith("[") or "[ref=" in line


def looks_like_page(items: Sequence[str]) -> bool:
    """An accessibility tree with element ids, or an HTML page."""
    sample = [line for line in items[:SAMPLE_LINES] if line.strip()]
    if len(sample) < 10:
        return False
    ids = sum(1 for line in sample if "BID:" in line[:120] or "[ref=" in line)
    tags = sum(1 for line in sample if line.lstrip().startswith("<"))
    return ids >= 0.1 * len(sample) or tags >= 0.4 * len(sample)


# -- what the call ran -----------------------------------------------------------------------------

#: Commands that run tests, builds or installs: their output is a log, not a script's result.
_RUNNERS = frozenset(
    {
        "pytest", "py.test", "tox", "nox", "pip", "pip3", "make", "cargo", "npm", "yarn", "pnpm",
        "mvn", "gradle", "go", "manage.py", "runtests.py", "setup.py", "-m",
    }
)  # fmt: skip
_INTERPRETERS = frozenset({"python", "python3", "node", "ruby", "bash", "sh", "perl", "php"})
_SCRIPT_ENDS = (".py", ".js", ".mjs", ".rb", ".sh", ".pl", ".php")
_SHELL_SPLIT = re.compile(r"[\s;&|()]+")


def runs_own_script(query: str | Mapping[str, Any] | None) -> bool:
    """Whether the call ran a script of the agent's own (``python reproduce.py``,
    ``python -c ...``, ``./exploit``) rather than a test runner or a build: its output is the
    result the agent is after. Judged on the command's words (the first 2,000 characters)."""
    command = command_of(query)
    if not command:
        return False
    # C-level passes pick the few words that matter (a heredoc can hold hundreds)
    words = list(map(str.strip, filter(None, _SHELL_SPLIT.split(command[:2000])), repeat("\"'")))
    names = list(map(itemgetter(2), map(str.rpartition, words, repeat("/"))))  # no folder
    if not _RUNNERS.isdisjoint(names):
        return False
    after = [*words[1:], ""]
    for k in compress(count(), map(_INTERPRETERS.__contains__, names)):
        if after[k].endswith(_SCRIPT_ENDS) or after[k] == "-c":
            return True
    for k in compress(count(), map(str.startswith, words, repeat("./"))):
        if len(words[k]) > 2 and (k == 0 or words[k - 1] != "cd"):
            return True
    return False


def command_of(query: str | Mapping[str, Any] | None) -> str:
    """The shell command a call ran: its ``command`` (or ``cmd``) argument, a list of words
    joined (Codex's ``["bash", "-lc", "..."]``), or the query text itself."""
    command = query.get("command") or query.get("cmd") if isinstance(query, Mapping) else query
    if isinstance(command, (list, tuple)) and all(isinstance(word, str) for word in command):
        command = " ".join(command)
    if not command and isinstance(query, Mapping) and isinstance(query.get("input"), str):
        command = _embedded_command(query["input"])
    return command if isinstance(command, str) else ""


#: The first line of SWE-agent's line edits: ``edit 12:14`` (lines 12-14 replaced by the text
#: below), ``insert 12``.
_LINE_EDIT = re.compile(r"(?:edit|insert)\s+\d+(?::\d+)?")
#: Arguments that place an edit tool's text by line number.
_LINE_KEYS = frozenset({"start_line", "end_line", "line_start", "line_end", "insert_line"})


def writes_by_line(args: Mapping[str, Any]) -> bool:
    """The call writes text at lines it names by number (SWE-agent's ``edit 12:14``, an edit
    tool's ``start_line`` or ``insert_line``): what it replaced, and where its text landed,
    shows only in its result, unlike a search-and-replace edit, whose arguments say both."""
    command = args.get("command")
    if isinstance(command, str):
        first = command.lstrip().split("\n", 1)[0].strip()
        if _LINE_EDIT.fullmatch(first):
            return True
    return any(str(key).lower() in _LINE_KEYS for key in args)


#: A command passed as a string argument inside a custom tool's code (Codex's code mode:
#: ``text(await tools.exec_command({cmd: "cat spec.md", max_output_tokens: 4000}))``).
_EMBEDDED = re.compile(r"""["']?\b(?:cmd|command)["']?\s*:\s*("(?:[^"\\\n]|\\.)*")""")


def _embedded_command(code: str) -> str:
    """The one command string a tool's code passes to a command tool; ``""`` when there is
    none, or more than one (the first 2,000 characters are read)."""
    found = _EMBEDDED.findall(code[:2000])
    if len(found) != 1:
        return ""
    try:
        value = json.loads(found[0])
    except ValueError:
        return ""
    return value if isinstance(value, str) else ""


#: Programs that print a file, or some of its lines, as they are.
_READERS = frozenset(
    {"cat", "nl", "head", "tail", "sed", "bat", "batcat", "type", "get-content", "gc"}
)
#: What a read may be piped through and stay a read of those lines.
_LINE_FILTERS = frozenset({"cat", "nl", "head", "tail", "sed"})
#: Shells a command is handed to (``bash -lc "cat f"``): their script is what ran.
_SHELLS = frozenset({"bash", "sh", "zsh", "powershell", "powershell.exe", "pwsh", "cmd"})
_READ_MAX_CHARS = 400
_SEPARATORS = frozenset({"&&", "||", ";", "&"})


#: Readers that print a stretch of a file rather than all of it.
_RANGE_READERS = frozenset({"sed", "head", "tail"})
FileRead = Literal["range", "file"]


def file_read(query: str | Mapping[str, Any] | None) -> FileRead | None:
    """Whether the call printed a file as it is (``"file"``: ``cat f``, ``nl -ba f``,
    ``Get-Content f``) or a stretch of one (``"range"``: ``sed -n '1,200p' f``, ``head -n 80 f``,
    ``nl -ba f | sed -n '40,90p'``), perhaps after a ``cd``; ``None`` for anything else. The
    agent asked for exactly that text, as it does with a file view's line numbers. A file tool's
    call (its arguments one file path, perhaps a line range: an MCP ``read_file``, Pi's ``read``)
    reads the same way."""
    if isinstance(query, Mapping) and not command_of(query):
        return _read_tool(query)
    programs: set[str] = set()
    for statement in _split(_script(query), _SEPARATORS):
        stages = _split(statement, frozenset({"|"}))
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
    a read tool's ``limit``), the fewest when it printed several stretches; ``None`` when that
    is not said in so many lines (``sed -n '40,$p'``, a script ``sed`` reads otherwise)."""
    if file_read(query) != "range":
        return None
    if isinstance(query, Mapping) and not command_of(query):
        return _tool_span(query)
    spans: list[int] = []
    for statement in _split(_script(query), _SEPARATORS):
        for stage in _split(statement, frozenset({"|"})):
            name = stage[0].lower() if stage else ""
            span = _sed_span(stage) if name == "sed" else _count_option(stage)
            if name in _RANGE_READERS:
                if span is None:
                    return None
                spans.append(span)
    return min(spans) if spans else None


_SED_RANGE = re.compile(r"(\d+)(?:,(\d+))?p")


def _sed_span(words: Sequence[str]) -> int | None:
    """The lines ``sed -n 'A,Bp'`` prints; ``None`` for any other script."""
    scripts = [word for word in words[1:] if not word.startswith("-")][:1]
    match = _SED_RANGE.fullmatch(scripts[0]) if scripts and "-n" in words else None
    if match is None:
        return None
    first, last = int(match.group(1)), int(match.group(2) or match.group(1))
    return last - first + 1 if last >= first else None


def _count_option(words: Sequence[str]) -> int | None:
    """The line count ``head``/``tail`` are given (``-n 80``, ``-n80``, ``-80``,
    ``--lines=80``); 10, theirs, when none is; ``None`` for a count from an end (``-n +40``,
    ``-n -5``: the rest of the file)."""
    for k, word in enumerate(words[1:], 1):
        if word in ("-n", "--lines") and k + 1 < len(words):
            value = words[k + 1]
        elif word.startswith("--lines="):
            value = word.partition("=")[2]
        elif word.startswith("-n"):
            value = word[2:]
        elif word.startswith("-") and word[1:].isdigit():
            value = word[1:]
        else:
            continue
        return int(value) if value.isdigit() else None
    return 10


def _tool_span(args: Mapping[str, Any]) -> int | None:
    """The lines a file tool's arguments ask for: ``limit``, or its first and last line."""
    keys = {str(key).lower(): value for key, value in args.items()}
    limit = _count(keys.get("limit"))
    if limit:
        return limit
    for first, last in (("start_line", "end_line"), ("line_start", "line_end")):
        start, end = _count(keys.get(first)), _count(keys.get(last))
        if start and end:
            return end - start + 1 if end >= start else None
    return None


def _count(value: object) -> int:
    """``value`` when it is a positive int (not a bool), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _script(query: str | Mapping[str, Any] | None) -> list[str]:
    """The shell words a call ran, out of a shell it was handed to (``bash -lc "cat f"``)."""
    words = _words(command_of(query))
    while words and words[0].rpartition("/")[2].lower() in _SHELLS:  # bash -lc "..."
        words = words[1:]
        while words and words[0].startswith("-"):
            words = words[1:]
        if len(words) == 1:
            words = _words(words[0])
    return words


#: A file tool's arguments: one of these names the file (compared in lower case, so
#: ``filePath`` too), the others say which lines.
_PATH_ARGS = frozenset({"path", "file_path", "filepath", "filename", "file", "target_file"})
_RANGE_ARGS = frozenset(
    {"offset", "limit", "head", "tail", "start_line", "end_line", "line_start", "line_end"}
)
_OTHER_READ_ARGS = frozenset({"encoding"})


def _read_tool(args: Mapping[str, Any]) -> FileRead | None:
    """``"file"`` or ``"range"`` when ``args`` are a file tool's: one path with a file name
    extension (a folder is listed, not read), line bounds and nothing else."""
    keys = {str(key).lower(): value for key, value in args.items()}
    paths = [value for key, value in keys.items() if key in _PATH_ARGS]
    if len(paths) != 1 or not isinstance(paths[0], str) or not _READ_ARGS.issuperset(keys):
        return None
    name = paths[0].rstrip().rpartition("/")[2]
    if "." not in name.strip("."):
        return None
    return "range" if _RANGE_ARGS.intersection(keys) else "file"


_READ_ARGS = _PATH_ARGS | _RANGE_ARGS | _OTHER_READ_ARGS


def _words(command: str) -> list[str]:
    """Shell words with ``|``, ``&&`` and ``;`` apart (quotes removed); a command that is too
    long, unbalanced, or holds a heredoc or redirection has none."""
    if not command or len(command) > _READ_MAX_CHARS:
        return []
    command = command.replace("2>/dev/null", " ").replace("2>&1", " ")  # no output redirected
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return []
    return [] if any(word[:1] in ("<", ">") for word in words) else words


def _split(words: Sequence[str], separators: frozenset[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for word in words:
        if word in separators:
            out.append([])
        else:
            out[-1].append(word)
    return out


def _names_a_file(words: Sequence[str]) -> bool:
    """A reader's words name something to read, and it changes nothing (no ``sed -i``): a word
    after the program that is no option, line count or ``sed`` script."""
    if words[0].lower() == "sed" and any(word.startswith("-i") for word in words):
        return False
    rest = [word for word in words[1:] if not word.startswith("-") and not word.isdigit()]
    if words[0].lower() == "sed":
        rest = rest[1:]  # the script ('1,200p') comes first
    return bool(rest)
