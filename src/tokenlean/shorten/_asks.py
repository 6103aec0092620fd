"""What else a call asked to see, judged from its command or its code-mode cell: search hits
(:func:`asks_for_hits`), how many whole files it printed (:func:`files_read`).

Each reads the call through :mod:`tokenlean.shorten._calls` (the command a call ran) and
:mod:`tokenlean.shorten._parts` (what each part of that command prints), so judging a call
stays linear whatever it holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokenlean.shorten._calls import shell_text
from tokenlean.shorten._cells import cell_calls
from tokenlean.shorten._parts import files_printed, searches

__all__ = ["asks_for_hits", "files_read"]


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
