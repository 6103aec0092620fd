"""What a tool call ran, read or wrote, judged from its arguments alone.

The shortener keeps an output by what the call asked for: a script of the agent's own
(:func:`runs_own_script`), a record fetched by its id (:func:`fetches_a_record`), another agent
asked (:func:`asks_an_agent`), text written at lines named by number (:func:`writes_by_line`);
a file printed whole or a stretch of one is :mod:`._reads`'s, from the shell words read here
(:func:`script_words`). Each reads a bounded prefix of the command (:data:`_READ_MAX_CHARS`
characters to split it into shell words, 2,000 to scan it), so judging a call stays linear
whatever it holds.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from itertools import compress, count, repeat
from operator import itemgetter
from typing import Any

from tokenlean.shorten._cells import cell_calls

__all__ = [
    "SEPARATORS",
    "asks_an_agent",
    "command_of",
    "fetches_a_record",
    "runs_own_script",
    "script_words",
    "shell_text",
    "split_at",
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
    statements = [s for s in split_at(script_words(command), SEPARATORS) if s and s[0] != "cd"]
    if len(statements) != 1:
        return False
    words, *filters = split_at(statements[0], frozenset({"|"}))
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


#: Shells a command is handed to (``bash -lc "cat f"``): their script is what ran.
_SHELLS = frozenset({"bash", "sh", "zsh", "powershell", "powershell.exe", "pwsh", "cmd"})
_READ_MAX_CHARS = 400
#: What ends a statement of a command (its shell words apart).
SEPARATORS = frozenset({"&&", "||", ";", "&"})


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


def script_words(query: str | Mapping[str, Any] | None) -> list[str]:
    """The shell words a call ran, out of a shell it was handed to (``bash -lc "cat f"``)."""
    words = _words(command_of(query))
    while words and words[0].rpartition("/")[2].lower() in _SHELLS:  # bash -lc "..."
        words = words[1:]
        while words and words[0].startswith("-"):
            words = words[1:]
        if len(words) == 1:
            words = _words(words[0])
    return words


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


def split_at(words: Sequence[str], separators: frozenset[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for word in words:
        if word in separators:
            out.append([])
        else:
            out[-1].append(word)
    return out
