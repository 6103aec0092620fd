"""How a cleared set is sent: cleared results become their placeholder, their inputs may go.

:func:`apply_clearing` gives the neutral messages as sent; :func:`clearing_edits` gives the
:class:`~tokenlean.transcript.Edit` objects an adapter applies to its own messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from tokenlean.context_editor._config import Clearing
from tokenlean.transcript import Edit, Message, ToolCall

__all__ = ["CLEARED_MARK", "STRATEGY", "apply_clearing", "clearing_edits"]

#: How a cleared result is marked, the way LangChain's own context editing marks one (so that
#: editor leaves it alone too).
STRATEGY = "tokenlean_context_editor"
CLEARED_MARK = {"context_editing": {"cleared": True, "strategy": STRATEGY}}


def apply_clearing(messages: Sequence[Message], cleared: Mapping[str, Clearing]) -> list[Message]:
    """The messages with cleared results replaced (and their calls' arguments emptied)."""
    out: list[Message] = []
    for message in messages:
        call_id = message.tool_call_id or ""
        if message.role == "tool" and call_id in cleared:
            message = replace(message, content=cleared[call_id].placeholder)
        elif message.tool_calls and any(_clears_input(c, cleared) for c in message.tool_calls):
            calls = tuple(
                ToolCall(c.id, c.name, {}) if _clears_input(c, cleared) else c
                for c in message.tool_calls
            )
            message = replace(message, tool_calls=calls)
        out.append(message)
    return out


def clearing_edits(
    messages: Sequence[Message], cleared: Mapping[str, Clearing], *, offset: int = 0
) -> list[Edit]:
    """The edits that send ``messages`` with the cleared results (and inputs) replaced."""
    edits: list[Edit] = []
    if not cleared:
        return edits
    for index, message in enumerate(messages):
        call_id = message.tool_call_id or ""
        if message.role == "tool" and call_id in cleared:
            text = cleared[call_id].placeholder
            edits.append(
                Edit(offset + index, message.id, text, "cleared", 0, 0, metadata=CLEARED_MARK)
            )
        elif message.tool_calls and any(_clears_input(c, cleared) for c in message.tool_calls):
            args: dict[str, Mapping[str, object]] = {
                c.id: {} for c in message.tool_calls if _clears_input(c, cleared)
            }
            edits.append(Edit(offset + index, message.id, None, "cleared inputs", 0, 0, args))
    return edits


def _clears_input(call: ToolCall, cleared: Mapping[str, Clearing]) -> bool:
    entry = cleared.get(call.id)
    return entry is not None and entry.clear_inputs
