"""Between AgentScope messages and the neutral transcript: the view, its addresses, the patch.

An AgentScope agent keeps one ``Msg`` per reply: its content blocks hold, in order, what the
model said (text, thinking, tool calls), the tool results and the hints injected between calls.
Its formatters send each run of said blocks as one assistant message, each tool result as a
tool result, and each hint as user text. :func:`read` lays a context out the same way, as the
neutral messages the planners read, and keeps for each the address of the blocks it came from
(``Msg`` index, block indices), so an edit is written onto exactly those blocks.

What the view shows as text: a ``TextBlock``, a hint given as a string, and a tool result whose
output is a string or text blocks only (a tool result with data is not text-only, so nothing
rewrites it). Thinking, data and anything newer than this adapter keep their place and are
never written to.

Marks (:data:`~tokenlean.transcript.MARK_KEY`) go where AgentScope keeps data its formatters
never send: a tool result's ``metadata``, and for an assistant turn's cut inputs the ``Msg``'s
``metadata`` under :data:`TURN_MARKS`, by the turn's first call id (one ``Msg`` holds every turn
of a reply).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentscope.message import HintBlock, Msg, TextBlock, ToolCallBlock, ToolResultBlock

from tokenlean.transcript import MARK_KEY, Content, Edit, Message, ToolCall, merged_metadata

__all__ = ["TURN_MARKS", "ContextView", "apply", "read", "result_text", "with_result_text"]

#: ``Msg.metadata`` key of the marks of the turns a message holds (first call id -> marks).
TURN_MARKS = "tokenlean_turns"
#: A block the planner never reads as text (an image, a file).
_OTHER: tuple[Mapping[str, Any], ...] = ({"type": "other"},)


@dataclass(frozen=True, slots=True)
class ContextView:
    """A context read as neutral messages; ``where[i]`` is ``(Msg index, block indices)`` of
    ``messages[i]`` (no blocks: the whole ``Msg``, a user or system message)."""

    messages: tuple[Message, ...]
    where: tuple[tuple[int, tuple[int, ...]], ...]


def read(context: Sequence[Msg]) -> ContextView:
    """The neutral view of ``context`` (module docstring)."""
    messages: list[Message] = []
    where: list[tuple[int, tuple[int, ...]]] = []
    for i, msg in enumerate(context):
        if msg.role != "assistant":
            messages.append(Message(role=msg.role, content=_joined(msg.content), id=msg.id))
            where.append((i, ()))
            continue
        for message, blocks in _segments(msg):
            messages.append(message)
            where.append((i, blocks))
    return ContextView(tuple(messages), tuple(where))


def _segments(msg: Msg) -> list[tuple[Message, tuple[int, ...]]]:
    out: list[tuple[Message, tuple[int, ...]]] = []
    said: list[int] = []

    def flush() -> None:
        if said:
            out.append((_turn(msg, said), tuple(said)))
            said.clear()

    for j, block in enumerate(msg.content):
        if isinstance(block, ToolResultBlock):
            flush()
            out.append((_result(block), (j,)))
        elif isinstance(block, HintBlock):
            flush()
            out.append((Message(role="user", content=_hint(block), id=block.id), (j,)))
        else:
            said.append(j)
    flush()
    return out


def _turn(msg: Msg, blocks: Sequence[int]) -> Message:
    content = [msg.content[j] for j in blocks]
    calls = [b for b in content if isinstance(b, ToolCallBlock)]
    text = "\n".join(b.text for b in content if isinstance(b, TextBlock))
    marks = msg.metadata.get(TURN_MARKS) if isinstance(msg.metadata, Mapping) else None
    mark = marks.get(calls[0].id) if calls and isinstance(marks, Mapping) else None
    return Message(
        role="assistant",
        content=text,
        tool_calls=tuple(ToolCall(c.id, c.name, _args(c.input)) for c in calls if c.id and c.name),
        metadata={MARK_KEY: mark} if isinstance(mark, Mapping) else {},
    )


def _args(raw: str) -> Mapping[str, Any]:
    """A call's arguments (``{}`` when its JSON is not an object: no cut can name a key)."""
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def result_text(block: ToolResultBlock) -> str | None:
    """The text of a tool result made of text alone; ``None`` when it holds anything else."""
    output = block.output
    if isinstance(output, str):
        return output
    if output and all(isinstance(b, TextBlock) for b in output):
        return "\n".join(b.text for b in output if isinstance(b, TextBlock))
    return None


def _result(block: ToolResultBlock) -> Message:
    text = result_text(block)
    marks = block.metadata.get(MARK_KEY) if isinstance(block.metadata, Mapping) else None
    return Message(
        role="tool",
        content=text if text is not None else _OTHER,
        name=block.name,
        tool_call_id=block.id,
        status="error" if block.state in ("error", "denied") else "success",
        metadata={MARK_KEY: marks} if isinstance(marks, Mapping) else {},
    )


def _hint(block: HintBlock) -> Content:
    if isinstance(block.hint, str):
        return block.hint
    return tuple(
        {"type": "text", "text": b.text} if isinstance(b, TextBlock) else _OTHER[0]
        for b in block.hint
    )


def _joined(content: Sequence[Any]) -> Content:
    if all(isinstance(b, TextBlock) for b in content):
        return "\n".join(b.text for b in content)
    return tuple(
        {"type": "text", "text": b.text} if isinstance(b, TextBlock) else _OTHER[0] for b in content
    )


# -- writing edits back ----------------------------------------------------------------------


def with_result_text(block: ToolResultBlock, text: str, mark: Mapping[str, Any]) -> ToolResultBlock:
    """``block`` sending ``text``, in the form its output had (one text block keeps its id),
    with ``mark`` merged into its metadata; every other field is kept."""
    output: Any = text
    if not isinstance(block.output, str):
        first = block.output[0]
        output = [
            first.model_copy(update={"text": text})
            if isinstance(first, TextBlock)
            else TextBlock(text=text)
        ]
    return block.model_copy(
        update={"output": output, "metadata": merged_metadata(block.metadata, mark)}
    )


def apply(context: list[Msg], view: ContextView, edits: Sequence[Edit], *, marks: bool) -> None:
    """Write ``edits`` onto ``context`` in place: each edited block replaced by a copy, each
    message holding one by a copy with the new content list; ``marks`` records the edits'
    marks (memory written once), or not (a request-only copy)."""
    for edit in edits:
        i, blocks = view.where[edit.index]
        msg = context[i]
        content = list(msg.content)
        metadata = dict(msg.metadata)
        if isinstance(edit.new_content, str) and len(blocks) == 1:
            block = content[blocks[0]]
            if isinstance(block, ToolResultBlock):
                content[blocks[0]] = with_result_text(
                    block, edit.new_content, edit.metadata if marks else {}
                )
        elif edit.tool_args:
            first = _cut_inputs(content, blocks, edit.tool_args)
            if marks and first is not None:
                turns = dict(metadata.get(TURN_MARKS) or {})
                turns[first] = merged_metadata(turns.get(first), edit.metadata.get(MARK_KEY) or {})
                metadata[TURN_MARKS] = turns
        context[i] = msg.model_copy(update={"content": content, "metadata": metadata})


def _cut_inputs(
    content: list[Any], blocks: Sequence[int], args: Mapping[str, Mapping[str, Any]]
) -> str | None:
    """Replace the inputs of the calls ``args`` names; the segment's first call id."""
    first: str | None = None
    for j in blocks:
        block = content[j]
        if not isinstance(block, ToolCallBlock):
            continue
        first = first if first is not None else block.id
        if block.id in args:
            text = json.dumps(dict(args[block.id]), ensure_ascii=False)
            content[j] = block.model_copy(update={"input": text})
    return first
