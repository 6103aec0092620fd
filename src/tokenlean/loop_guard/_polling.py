"""Polling: a step asking about a process that is still running is waiting, not looping.

Agents wait on long commands by polling them, and every poll is the same call with the same
answer until the process ends: Codex code mode continues a yielded ``exec`` cell with ``wait``
calls answered "Script running with cell ID 20"; Codex CLI's ``write_stdin`` with no input is
answered "Process running with session ID 7"; Claude Code's ``TaskOutput`` and ``BashOutput``
answer ``<status>running</status>``. The ``repeat`` pattern would end such a run at its third
poll. The rule here knows no tool name, only the shape of such an answer.

A step *reports* a target still running when the head of its output (its first
:data:`HEAD_CHARS` characters, so a huge output costs no more than a short one) holds

- a status line: a line that says what is running, and nothing else, either the first line
  ("Still running...", "The job is still running.") or, naming the id of what runs, one of the
  first few before an ``Output:`` line ("Script running with cell ID 20", "Process running with
  session ID 7", "Command running in background with ID: b1");
- or an explicit status field: ``<status>running</status>``, ``"status": "running"``,
  ``status: running`` on a line of its own (``state`` too).

Output that merely holds the word is neither: "running 3 tests" (cargo), "Running setup.py
install", a log line saying a server is running at some address. The *target* is what names the
running thing: the id of the status line, else the first id field of the head (``<task_id>``,
``"session_id"``), else the first id-named argument of the call (``cell_id``, ``bash_id``), else
the call itself (tool and canonical arguments).

A call that writes nothing to a session it names (``write_stdin`` with ``chars: ""``, in a code
mode cell too) reads what the session's process printed since: it reports that session as still
running, whatever was printed (a ``watch`` prints the same status each time), unless the answer
says the process exited.

A step *polls* when it reports a target running that its call asks about (an argument holds
the target, as ``wait(cell_id="20")`` does, or the target is the call itself) and that one of
the :data:`POLL_LOOKBACK` steps before it also reported running: the call that started it, or
an earlier poll of it. The detector leaves polls out as it leaves out the steps of exempt tools:
they neither count toward a pattern nor interrupt one. A command started again and again is
still seen (its call does not name the cell or session it starts), and so is anything the agent
does between its polls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from tokenlean.loop_guard._step import Step

__all__ = ["HEAD_CHARS", "POLL_LOOKBACK", "Report", "polls", "running_report"]

#: How much of an output is read for a running status: a status is the output's head.
HEAD_CHARS = 400
#: How many steps back a poll looks for the step that reported the same target running.
POLL_LOOKBACK = 32
#: How many of the head's lines may be a status line (Codex CLI's is its third).
_HEAD_LINES = 6

_STATUS_LINE = re.compile(
    r"(?:(?:the\s+)?[a-z][\w-]*\s+(?:is\s+)?)?(?:still\s+)?running"
    r"(?:\s+in\s+(?:the\s+)?background)?"
    r"(?:\s+with\s+(?:[\w-]+\s+)?id\b:?\s*(?P<id>[\w.:-]*\w)\b.*|\s*\(\s*(?:pid|id)\b:?\s*"
    r"(?P<pid>\w+)\s*\)[\s.!]*|[\s.!\u2026]*)",
    re.I,
)
_OUTPUT_LINE = re.compile(r"output:?", re.I)
_STATUS_FIELD = re.compile(
    r"<(status|state)>\s*running\s*</\1>"
    r"|\"(?:status|state)\"\s*:\s*\"running\""
    r"|^[ \t]*(?:status|state)[ \t]*[:=][ \t]*running[ \t]*$",
    re.I | re.M,
)
_ID_FIELD = re.compile(
    r"<(?P<tag>\w+)>\s*(?P<xml>[\w.:-]+)\s*</(?P=tag)>|\"(?P<key>\w+)\"\s*:\s*\"?(?P<json>[\w.:-]+)"
)


class Report(NamedTuple):
    """What a step reports still running, and whether its call asks about that."""

    target: str
    asks: bool


def running_report(step: Step, call: Callable[[Step], str]) -> Report | None:
    """What ``step`` reports still running (see the module docstring), or ``None``.

    ``call`` gives the step's canonical action, the target when nothing else names one.
    """
    head = step["observation"][:HEAD_CHARS]
    read = _session_read(head, step)
    if read is not None:
        return read
    if "running" not in head.lower():
        return None  # most outputs: one scan of a bounded head
    line = _status_line(head)
    if line is not None:
        target = line.group("id") or line.group("pid") or _named(head, step)
    elif _STATUS_FIELD.search(head) is not None:
        target = _named(head, step)
    else:
        return None
    if target is None:
        return Report(call(step), asks=True)
    values = step["action_input"].values()
    return Report(target, asks=any(_scalar(value) == target for value in values))


#: A call that writes nothing to a session it names, to read what it printed since (Codex's
#: ``write_stdin`` with ``chars: ""``, as a tool call's arguments or inside a code-mode cell).
_NO_INPUT = re.compile(r"""\bchars["']?\s*[:=]\s*(?:""|'')""")
_SESSION = re.compile(r"""\bsession_?id["']?\s*[:=]\s*["']?(\w+)""", re.I)
#: An answer saying the session's process has ended.
_EXITED = re.compile(r"\bexit(?:ed)?\b[^\n]{0,40}\bcode\b|\bprocess exited\b", re.I)


def _session_read(head: str, step: Step) -> Report | None:
    """A read of a session's new output that writes nothing to it: waiting on its process,
    as a poll reported running is, whatever the process printed since (a watch prints the
    same status each time), unless the answer says the process ended. Its target is the
    session it names."""
    if _EXITED.search(head) is not None:
        return None
    args = step["action_input"]
    if args.get("chars") == "" and _scalar(args.get("session_id")):
        return Report(str(_scalar(args.get("session_id"))), asks=True)
    cell = " ".join(value for value in args.values() if isinstance(value, str))[:HEAD_CHARS]
    session = _SESSION.search(cell)
    if session is None or _NO_INPUT.search(cell) is None:
        return None
    return Report(session.group(1), asks=True)


def _status_line(head: str) -> re.Match[str] | None:
    """The first of the head's first lines that is a status line (none past ``Output:``); one
    that names no id ("Still running...") only as the first line that is not blank."""
    lines = [text for text in (line.strip() for line in head.splitlines()[:_HEAD_LINES]) if text]
    for index, text in enumerate(lines):
        if _OUTPUT_LINE.fullmatch(text):
            return None
        found = _STATUS_LINE.fullmatch(text)
        if found is not None and (index == 0 or found.group("id") or found.group("pid")):
            return found
    return None


def _named(head: str, step: Step) -> str | None:
    """The first id field of the head, else the first id-named argument of the call."""
    for field in _ID_FIELD.finditer(head):
        if _is_id(field.group("tag") or field.group("key")):
            return field.group("xml") or field.group("json")
    for key, value in sorted(step["action_input"].items()):
        if _is_id(key):
            return _scalar(value) or None
    return None


def _scalar(value: object) -> str | None:
    """An argument's value as an id: a string or a whole number, as text."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value)
    return None


def _is_id(key: str) -> bool:
    lower = key.lower()
    return lower in ("id", "pid") or lower.endswith("_id") or key.endswith(("Id", "ID"))


def polls(reports: Sequence[Report | None], *, start: int = 0) -> list[int]:
    """The positions from ``start`` on that poll (``reports[i]``: what step ``i`` reports
    running): their call asks about a target reported within the :data:`POLL_LOOKBACK`
    positions before.

    ``reports`` must begin :data:`POLL_LOOKBACK` positions before ``start``, or where the steps
    that count begin: a report older than that is not looked for.
    """
    last: dict[str, int] = {}
    found: list[int] = []
    for index, report in enumerate(reports):
        if report is None:
            continue
        seen = last.get(report.target)
        if report.asks and index >= start and seen is not None and index - seen <= POLL_LOOKBACK:
            found.append(index)
        last[report.target] = index
    return found
