"""What a tool call ran, read or wrote, judged from its arguments alone.

The shortener keeps an output by what the call asked for: a script of the agent's own
(:func:`runs_own_script`), a file printed whole or a stretch of one (:func:`file_read`,
:func:`requested_lines`), text written at lines named by number (:func:`writes_by_line`). Each
reads a bounded prefix of the command (:data:`_READ_MAX_CHARS` characters to split it into
shell words, 2,000 to scan it), so judging a call stays linear whatever it holds.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from itertools import compress, count, repeat
from operator import itemgetter
from typing import Any, Literal

from tokenlean._caches import byte_bounded
from tokenlean.shorten._cells import cell_calls
from tokenlean.shorten._parts import CompoundRead, compound_read, line_count, sed_span

__all__ = [
    "FileRead",
    "asks_an_agent",
    "command_of",
    "fetches_a_record",
    "file_read",
    "requested_lines",
    "runs_own_script",
    "shell_text",
    "writes_by_line",
]

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
#: An interpreter handed a script of the agent's own on its input (``python3 - <<'EOF'``,
#: ``node <<EOF``): what that script prints is its result, whatever words the script holds.
_STDIN_SCRIPT = re.compile(
    r"(?:^|[;&|(\n])[ \t]*(?:[\w./-]*/)?(?:python3?|node|ruby|perl|php)"
    r"[ \t]+(?:-[ \t]+)?<<-?[ \t]*['\"]?\w"
)


def runs_own_script(query: str | Mapping[str, Any] | None) -> bool:
    """Whether the call ran a script of the agent's own (``python reproduce.py``,
    ``python -c ...``, ``./exploit``) rather than a test runner or a build: its output is the
    result the agent is after. Judged on the command's words (the first 2,000 characters)."""
    command = command_of(query)
    if not command:
        return False
    if _STDIN_SCRIPT.search(command[:2000]):
        return True
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
        command = _cell_command(query["input"])
    return command if isinstance(command, str) else ""


def _cell_command(code: str) -> str:
    """The commands a code-mode cell runs, one per line (``Promise.all`` of several
    ``exec_command`` calls is a compound of them); ``""`` when one is computed at run time.
    Code with no ``tools.`` call at all may still pass a command to a tool of its own."""
    calls = cell_calls(code)
    if not calls:
        return _embedded_command(code)
    commands = [call.args.get("cmd") for call in calls if call.tool == "exec_command"]
    if not commands or not all(isinstance(command, str) for command in commands):
        return ""
    return "\n".join(map(str, commands))


#: Arguments that ask another model for an answer written for the agent: a sub-agent's task
#: (Claude Code's and OpenCode's ``Task``, deepagents' ``task``), a question about a page or an
#: investigation (``WebFetch``'s ``prompt``, gemini-cli's investigator's ``objective``).
#: Compared in lower case. (A background task's output fetched by its id, Claude Code's
#: ``TaskOutput``, is a record: a sub-agent's report stays whole, a shell's log is a log.)
_AGENT_ARGS = frozenset({"subagent_type", "agent_type"})
_PROMPT_ARGS = frozenset({"prompt", "objective"})


def asks_an_agent(query: str | Mapping[str, Any] | None) -> bool:
    """Whether the call asked another model for an answer (a sub-agent's report, a page read
    to answer a prompt): its output was written for the agent and is already distilled, so the
    agent reads all of it, as it reads a file it printed. A prompt is at least three words."""
    if not isinstance(query, Mapping) or command_of(query):
        return False
    keys = {str(key).lower(): value for key, value in query.items()}
    if not _AGENT_ARGS.isdisjoint(keys):
        return True
    prompts = (keys[key] for key in _PROMPT_ARGS.intersection(keys))
    return any(isinstance(text, str) and len(text[:200].split()) >= 3 for text in prompts)


#: An argument that names one record: ``id``, ``order_id``, ``taskId``, ``issue_number``, ``key``,
#: ``name`` (OpenCode's ``skill``: instructions the agent follows, ``table_name``) (not a place
#: in a text: ``line_number``, ``pageNumber``).
_ID_KEY = re.compile(
    r"(?!(?i:line|page|start|end))"
    r"(?:(?i:(?:\w*[_-])?(?:id|number|key|slug|name))|\w*[a-z](?:Id|ID|Number|Key|Name))"
)
_ID_MAX_CHARS = 80


def fetches_a_record(query: str | Mapping[str, Any] | None) -> bool:
    """Whether the call fetched one record by its identifier (``directive_get(id="d-016")``,
    ``get_issue(owner, repo, issue_number)``, ``TaskOutput(task_id, block, timeout)``,
    ``skill(name="frontend-design")``): at most
    four arguments, each a number, a flag or a short word, one of them naming the record. The
    record is what the agent asked to read. A command that shows one record by its id
    (``gh issue view 12``, ``kubectl describe pod web-7f9c``, ``cargo autopilot directive show
    d-004``, ``gh pr diff 45``, ``git show 4a54611``, ``git diff main...HEAD``) fetches it too,
    and so does a request to an API the agent wrote itself (``gh api repos/o/r/pulls/7``,
    ``gh api graphql -f query=...``); a code-mode cell is judged by its one tool call."""
    if (command := command_of(query)) or isinstance(query, str):
        return _shows_a_record(command)
    if not isinstance(query, Mapping):
        return False
    if len(query) == 1 and isinstance(code := query.get("input"), str):
        calls = cell_calls(code) or ()  # a code-mode cell calling one tool: judged by its call
        return len(calls) == 1 and calls[0].complete and fetches_a_record(dict(calls[0].args))
    if not 0 < len(query) <= 4:
        return False
    named = False
    for key, value in query.items():
        if not isinstance(value, (str, int)):  # a bool is an int
            return False
        if isinstance(value, str) and (len(value) > _ID_MAX_CHARS or " " in value.strip()):
            return False
        named = named or _ID_KEY.fullmatch(str(key)) is not None
    return named


#: A command's word that shows the one record the next word names (``diff``: a change by its
#: id, ``gh pr diff 45``).
_SHOW_VERBS = frozenset({"show", "view", "get", "describe", "inspect", "diff"})
#: What a record may be piped through and still be shown as it is: at most a part of it.
_CAPS = frozenset({"head", "tail", "cat"})
#: A record's id on a command line: one word holding a digit (``12``, ``#12``, ``d-004``,
#: ``PROJ-7``, ``web-7f9c``), not a path or a revision (``HEAD:src/a.py``, ``a/b``).
_ID_WORD = re.compile(r"#?[A-Za-z0-9][\w.-]*")
#: A revision range (``main...HEAD``, ``origin/main..HEAD``, ``HEAD~3..``): commits the agent
#: reviews (``git diff main...HEAD``), not its own edits; not a path (``a/../b``, ``../a``).
_RANGE_WORD = re.compile(r"[\w@^~{}/-]*[\w@^~{}-]\.\.\.?(?!/)[\w@^~{}/-]*")


def _shows_a_record(command: str) -> bool:
    """Whether ``command`` is one program showing one record: a word of :data:`_SHOW_VERBS`
    after the program's name, then (past any flags) an id, perhaps after the record's kind
    (``kubectl get pod web-7f9c``); perhaps after a ``cd``, and piped at most through
    ``head``, ``tail`` or ``cat`` (a part of the record is still the record)."""
    statements = [s for s in _split(_script(command), _SEPARATORS) if s and s[0] != "cd"]
    if len(statements) != 1:
        return False
    words, *filters = _split(statements[0], frozenset({"|"}))
    if not _CAPS.issuperset(stage[0].lower() if stage else "" for stage in filters):
        return False
    if len(words) > 2 and words[1].lower() == "api":
        return True  # a request the agent wrote itself (``gh api graphql -f query=...``)
    for k in range(1, len(words) - 1):
        if words[k].lower() in _SHOW_VERBS:
            named = [word for word in words[k + 1 :] if not word.startswith("-")][:2]
            return any(map(_names_a_record, named))
    return False


def _names_a_record(word: str) -> bool:
    if len(word) > _ID_MAX_CHARS:
        return False
    if _RANGE_WORD.fullmatch(word):
        return True
    return _ID_WORD.fullmatch(word) is not None and any(map(str.isdigit, word))


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
    statements = [s for s in _split(_script(query), _SEPARATORS) if s and s[0].lower() != "cd"]
    if len(statements) != 1:
        return None
    spans: list[int] = []
    for statement in statements:
        for stage in _split(statement, frozenset({"|"})):
            name = stage[0].lower() if stage else ""
            span = _sed_span(stage) if name == "sed" else line_count(stage)
            if name in _RANGE_READERS:
                if span is None:
                    return None
                spans.append(span)
    return min(spans) if spans else None


def shell_text(query: str | Mapping[str, Any] | None) -> str:
    """The script a call ran, as written: a list of words handed to a shell
    (``["bash", "-lc", "sed -n '1,9p' f && rg x"]``) gives its script, quotes intact."""
    words = query.get("command") if isinstance(query, Mapping) else None
    if not isinstance(words, (list, tuple)) or len(words) < 3:
        return command_of(query)
    shell = all(isinstance(w, str) for w in words) and str(words[-2]).startswith("-")
    if shell and str(words[0]).rpartition("/")[2].lower() in _SHELLS:
        return str(words[-1])
    return command_of(query)


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


def _words(command: str) -> list[str]:
    """Shell words with ``|``, ``&&`` and ``;`` apart (quotes removed); a command that is too
    long, unbalanced, or holds a heredoc or redirection has none."""
    if not command or len(command) > _READ_MAX_CHARS or "\n" in command.strip():
        return []  # shlex reads a newline as a blank: several lines are split as statements
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
