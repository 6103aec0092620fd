"""What each part of a shell command prints: a file, a page of one, search hits, a status.

A command whose parts all print what the agent asked to see (``sed -n '120,225p' a.rs && rg -n
apply_statuses src; git status``) is a read of those parts: :func:`compound_read` says so, and
how (whole files, pages of how many lines). A command that searches (``grep -r x src``,
``git log | grep fix``) prints hits: :func:`searches`. Each judges the statements of
:func:`~tokenlean.shorten._shell.statements` word by word; when a part is anything else (a
build, a test run, a network call), the command is no read and is judged as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tokenlean._caches import byte_bounded
from tokenlean.shorten._shell import Statement, statements

__all__ = [
    "CompoundRead",
    "compound_read",
    "files_printed",
    "line_count",
    "searches",
    "sed_span",
]

Part = Literal["read", "page", "search", "listing", "status", "diff", "quiet", "move", "other"]
#: Parts that print what the agent asked to see; the first four are what makes a command a read.
_ASKED = frozenset({"read", "page", "search", "diff"})
_SHOWN = _ASKED | {"listing", "status", "quiet"}

_READERS = frozenset({"cat", "nl", "bat", "batcat", "type", "get-content", "gc", "less", "more"})
_PAGERS = frozenset({"head", "tail", "sed"})
_SEARCHERS = frozenset({"rg", "grep", "egrep", "fgrep", "ag", "ack", "select-string", "sls"})
_LISTERS = frozenset(
    {"ls", "find", "fd", "tree", "du", "stat", "file", "wc", "realpath", "readlink", "which"}
)
#: Statements that print nothing the agent asked for, or only a label of its own.
_QUIET = frozenset(
    {
        "echo", "printf", "read", "true", "false", "export", "set", "unset",
        "test", "[", "[[", "sleep", ":", "local", "shopt", "pwd", "date", "done", "fi", "esac",
        "for", "break", "continue", "write-host", "write-output",
    }
)  # fmt: skip
#: Words that open a statement without being its program.
_PREFIXES = frozenset(
    {"do", "then", "else", "elif", "if", "while", "until", "!", "time", "{", "}", "command"}
)
#: Filters a part's output may go through and stay what it was (``| sort``, ``| head -n 50``).
_FILTERS = frozenset(
    {"sort", "uniq", "cut", "tr", "column", "cat", "nl", "fold", "expand", "less", "more", "jq"}
)
_GIT_STATUS = frozenset(
    {
        "status", "log", "branch", "rev-parse", "remote", "tag", "describe", "stash",
        "shortlog", "reflog", "merge-base", "rev-list", "cherry", "config", "worktree",
    }
)  # fmt: skip
_GIT_DIFF = frozenset({"diff", "show", "blame", "range-diff"})
#: Subcommands that change the work tree or refs and print a line or two about it, if anything.
_GIT_QUIET = frozenset({"add", "switch", "checkout", "fetch", "restore", "mv", "rm"})
#: Programs that change files and print nothing when they succeed.
_ACTIONS = frozenset({"mkdir", "touch", "cp", "mv", "rm", "ln", "chmod"})
_GIT_LISTS = frozenset({"ls-files", "ls-tree"})
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
_SED_RANGE = re.compile(r"(\d+)(?:,(\d+))?p")


@dataclass(frozen=True, slots=True)
class CompoundRead:
    """A command of several parts that is a read: ``"file"`` when it printed whole files (and
    at most listings and status besides), else ``"range"``; ``span``, the lines its page asked
    for when one page is all it printed (``None`` otherwise); ``files``, how many whole files
    it printed."""

    read: Literal["file", "range"]
    span: int | None
    files: int


@dataclass(frozen=True, slots=True)
class _Judged:
    part: Part
    span: int | None = None
    files: int = 0


def compound_read(command: str) -> CompoundRead | None:
    """Whether ``command`` (two statements or more besides ``cd``) prints only files, pages,
    search hits, diffs, listings and status, at least one of the first four; ``None`` for
    anything else, and for a command too long or unbalanced to split."""
    judged = _judge(command)
    if judged is None or sum(1 for j in judged if j.part != "move") < 2:
        return None
    parts = [j for j in judged if j.part not in ("quiet", "move")]
    if not parts or any(j.part not in _SHOWN for j in parts):
        return None
    if not any(j.part in _ASKED for j in parts):
        return None
    texts = [j for j in parts if j.part not in ("listing", "status")]
    files = sum(j.files for j in parts)
    if all(j.part == "read" for j in texts):
        return CompoundRead("file", None, files)
    # one page and nothing else printed is that page; several stretches, or a page beside
    # hits or a log, were each chosen: a view of them (not a file read through, a page at a time)
    alone = len(parts) == 1 and parts[0].part == "page"
    return CompoundRead("range", parts[0].span if alone else None, files)


def files_printed(command: str) -> int:
    """How many whole files ``command`` printed (``cat a b``, ``cat a; cat b``: 2)."""
    return sum(j.files for j in _judge(command) or ())


def searches(command: str) -> bool:
    """Whether ``command`` is one search (``grep -r x .``, ``rg -A 3 x``, ``cat f | grep x``),
    perhaps after a ``cd``: what it prints are hits, whether or not they carry line numbers."""
    judged = _judge(command)
    parts = [j for j in judged or () if j.part not in ("quiet", "move")]
    return len(parts) == 1 and parts[0].part == "search"


@byte_bounded(max_entries=256)
def _judge(command: str) -> tuple[_Judged, ...] | None:
    """Each statement of ``command`` judged (memoized: a call is asked several questions)."""
    found = _unwrapped(statements(command))
    return None if found is None else tuple(map(_statement, found))


def _unwrapped(found: list[Statement] | None) -> list[Statement] | None:
    """The statements of a script handed to a shell (``bash -lc "sed -n '1,9p' f; rg x"``)."""
    if not found or len(found) != 1 or len(found[0]) != 1:
        return found
    words = found[0][0]
    if words and words[0].rpartition("/")[2].lower() in ("bash", "sh", "zsh"):
        rest = [w for w in words[1:] if not w.startswith("-")]
        if len(rest) == 1 and len(words) > 2:
            return statements(rest[0])
    return found


def _statement(stages: Statement) -> _Judged:
    """A pipeline: its first stage says what it prints, the filters after it may narrow it."""
    judged = _program(_bare(stages[0]))
    for stage in stages[1:]:
        judged = _filtered(judged, _bare(stage))
        if judged.part == "other":
            break
    return judged


def _bare(words: Sequence[str]) -> list[str]:
    """A stage's words without the keywords and assignments before its program, and without
    redirections of errors (``2>/dev/null``, ``2>&1``)."""
    at = 0
    while at < len(words) and (words[at] in _PREFIXES or _ASSIGNMENT.match(words[at])):
        at += 1
    out: list[str] = []
    skip = False
    for word in words[at:]:
        if skip:
            skip = False
        elif word in ("2>", "2>>"):
            skip = True
        elif word not in ("2>&1", "1>&2", ">&2"):
            out.append(word)
    return out


def _program(words: list[str]) -> _Judged:
    """What a pipeline's first stage prints."""
    if not words:
        return _Judged("quiet")
    name = words[0].rpartition("/")[2].lower()
    if name in ("cd", "pushd", "popd"):
        return _Judged("move")
    if any(word.startswith(("<", ">")) for word in words[1:]):
        # a heredoc printed (cat <<EOF) is a text of the agent's own; any other redirection
        # (into a file, from one) is no read
        return _Judged("quiet" if name == "cat" and "<<" in words[1:] else "other")
    if name in _QUIET or (name in _ACTIONS and "-v" not in words):
        return _Judged("quiet")
    if name == "git":
        return _git(words)
    if name == "find":
        return _find(words)
    if name == "xargs":
        return _program(_after_options(words))
    return _named(name, words)


def _named(name: str, words: list[str]) -> _Judged:
    if _reports_status(words):
        return _Judged("status")
    if name in _SEARCHERS:
        return _Judged("search")
    if name in _LISTERS:
        return _Judged("listing")
    operands = _operands(name, words)
    if name in _READERS:
        return _Judged("read", files=len(operands)) if operands else _Judged("other")
    if name in _PAGERS and operands:
        span = _span(name, words)
        if span is not False:
            return _Judged("page", span if isinstance(span, int) else None)
    return _Judged("other")


def _reports_status(words: list[str]) -> bool:
    """A program asked for its version, or a tool's ``status`` (``gh auth status``, ``mise
    --version``): a line or two about the setup."""
    rest = [word for word in words[1:] if not word.startswith("-")]
    if not rest and any(word in ("--version", "-V", "version") for word in words[1:]):
        return True
    return "status" in rest[:2] and len(rest) <= 2


def _filtered(judged: _Judged, words: list[str]) -> _Judged:
    """``judged`` piped through ``words``: a search of it is hits, a count is a status, a
    page of it is a page; anything else makes the statement no read."""
    name = words[0].rpartition("/")[2].lower() if words else ""
    if name == "xargs":
        return _program(_after_options(words))
    if name in _SEARCHERS:
        return _Judged("search")
    if name == "wc":
        return _Judged("status")
    if name in _PAGERS:
        span = _span(name, words)
        if span is False:
            return _Judged("other")
        if judged.part in ("read", "page"):
            spans = [s for s in (judged.span, span) if isinstance(s, int)]
            return _Judged("page", min(spans) if spans else None)
        return judged
    return judged if name in _FILTERS else _Judged("other")


def _git(words: list[str]) -> _Judged:
    """``git``'s subcommand, past its global options (``-C dir``, ``--no-pager``)."""
    at = 1
    while at < len(words) and words[at].startswith("-"):
        at += 2 if words[at] in ("-C", "-c") else 1
    sub = words[at] if at < len(words) else ""
    if sub == "grep":
        return _Judged("search")
    if sub in _GIT_LISTS:
        return _Judged("listing")
    if sub == "show" and any(":" in w for w in words[at + 1 :] if not w.startswith("-")):
        return _Judged("read", files=1)  # git show rev:path prints a file as it was
    if sub in _GIT_DIFF:
        return _Judged("diff")
    if sub in _GIT_QUIET:
        return _Judged("quiet")
    if sub in _GIT_STATUS and not (sub in ("branch", "tag", "stash", "config") and len(words) > 3):
        return _Judged("status")
    return _Judged("other")


def _find(words: list[str]) -> _Judged:
    """``find``: a listing, or what the program it runs on each file prints (``-exec cat``)."""
    if "-delete" in words:
        return _Judged("other")
    for at, word in enumerate(words):
        if word in ("-exec", "-execdir", "-ok"):
            run = [w for w in words[at + 1 :] if w not in (";", "+", "\\;")]
            judged = _program([w for w in run if w != "{}"] + ["{}"])
            return judged if judged.part != "read" else _Judged("read", files=1)
    return _Judged("listing")


def _after_options(words: list[str]) -> list[str]:
    at = 1
    while at < len(words) and words[at].startswith("-"):
        at += 1
    return words[at:]


def _operands(name: str, words: list[str]) -> list[str]:
    """The files a reader or pager names: words past the program that are no option, count
    or (for ``sed``) its script."""
    rest, skip = [], False
    for word in words[1:]:
        if skip:
            skip = False
        elif word in ("-n", "--lines", "-c", "-e") and name in ("head", "tail"):
            skip = True
        elif not word.startswith("-") and not word.lstrip("+").isdigit():
            rest.append(word)
    return rest[1:] if name == "sed" else rest


def _span(name: str, words: list[str]) -> int | bool | None:
    """The lines a pager asks for (``None``: not said in so many lines); ``False`` when it is
    no pager here (``sed -i``, ``sed`` without ``-n``, ``tail -f``)."""
    if name == "sed":
        if any(w.startswith("-i") for w in words) or "-n" not in words:
            return False
        scripts = [w for w in words[1:] if not w.startswith("-")][:1]
        spans = [sed_span(part) for part in scripts[0].split(";")] if scripts else [None]
        return None if None in spans else sum(s for s in spans if s)
    if any(w in ("-f", "-F", "--follow") for w in words):
        return False
    return line_count(words)


def sed_span(script: str) -> int | None:
    """The lines one ``A,Bp`` sed script prints; ``None`` for any other script."""
    match = _SED_RANGE.fullmatch(script.strip())
    if match is None:
        return None
    first, last = int(match.group(1)), int(match.group(2) or match.group(1))
    return last - first + 1 if last >= first else None


def line_count(words: Sequence[str]) -> int | None:
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
