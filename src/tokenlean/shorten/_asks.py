"""What else a call asked to see, judged from its command, its code-mode cell or its arguments:
search hits (:func:`asks_for_hits`), what a cell computed (:func:`computes_only`), a search or
extract tool's answer (:func:`answers_a_query`), how many whole files it printed
(:func:`files_read`).

Each reads the call through :mod:`tokenlean.shorten._calls` (the command a call ran) and
:mod:`tokenlean.shorten._parts` (what each part of that command prints), so judging a call
stays linear whatever it holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokenlean.shorten._calls import command_of, shell_text
from tokenlean.shorten._cells import cell_calls
from tokenlean.shorten._parts import files_printed, searches

__all__ = ["answers_a_query", "asks_for_hits", "computes_only", "files_read"]


def files_read(query: str | Mapping[str, Any] | None) -> int:
    """How many whole files a command printed (``cat a.rs b.rs``, ``cat a.rs; cat b.rs``: 2);
    at least 1."""
    return max(1, files_printed(shell_text(query)))


def asks_for_hits(query: str | Mapping[str, Any] | None) -> bool:
    """Whether the call searched (``grep -r x src``, ``rg -A 3 x``), or ran a code-mode cell
    whose commands are computed at run time (what it read is unclear, so it is kept as asked):
    its output is what the agent asked to see, line numbers or not."""
    command = shell_text(query)
    if command:
        return searches(command)
    code = query.get("input") if isinstance(query, Mapping) else None
    calls = cell_calls(code) if isinstance(code, str) else None
    return any(call.tool == "exec_command" and "cmd" not in call.args for call in calls or ())


def computes_only(query: str | Mapping[str, Any] | None) -> bool:
    """Whether the call is a code-mode cell that calls no tool (``text(ALL_TOOLS.filter(...))``):
    what it printed is what its own script picked out, as a search's hits are. Asked of an
    output that came with a cell's run header, so another tool's code is not judged by it."""
    code = query.get("input") if isinstance(query, Mapping) else None
    return isinstance(code, str) and bool(code.strip()) and cell_calls(code) == ()


#: Arguments that pose a query to a search or extract tool (an MCP code search's ``query``,
#: GitHub's ``q``): its result is the hits the agent asked for. Compared in lower case.
_QUERY_ARGS = frozenset({"query", "q", "queries", "search_query", "search_term"})
#: Words in a tool's name that say it answers a query (``mcp__github__search_code``,
#: ``mcp__firecrawl__extract``, ``mcp__context7__query-docs``), called from a code-mode cell.
_QUERY_TOOLS = ("search", "extract", "query", "grep", "lookup")


def answers_a_query(query: str | Mapping[str, Any] | None) -> bool:
    """Whether the call asked a search or extract tool (an MCP server's, most often) for hits:
    no command, and an argument posing the query (at least one character), or, in a code-mode
    cell, one tool call whose name says it searches or extracts. What it returns is exactly
    what the agent asked for, so it is kept as hits are, not outlined as unasked source."""
    if not isinstance(query, Mapping) or command_of(query):
        return False
    code = query.get("input")
    if isinstance(code, str) and len(query) == 1:
        calls = cell_calls(code) or ()
        names = [call.tool.lower() for call in calls]
        return len(names) == 1 and any(word in names[0] for word in _QUERY_TOOLS)
    return any(str(key).lower() in _QUERY_ARGS and _poses(value) for key, value in query.items())


def _poses(value: object) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    return isinstance(value, list) and any(isinstance(v, str) and v.strip() for v in value)
