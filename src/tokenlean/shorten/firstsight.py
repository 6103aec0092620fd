"""First-sight planning over a neutral transcript: which tool results to shorten, and how.

Only tool results the model has not been sent yet (those after the last assistant turn) are
candidates, so a shortened result is the only version the model ever sees and every later
request repeats its bytes. The query of each result is its tool call's arguments; the lines of
every earlier message (as the model saw them) are the ``seen`` set that lets a result point
back to what it repeats instead of sending it again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenlean.shorten.core import shorten
from tokenlean.shorten.markers import Retrieval
from tokenlean.shorten.options import ShortenOptions
from tokenlean.shorten.report import ShortenReport
from tokenlean.shorten.seen import Seen
from tokenlean.shorten.text import estimate_tokens
from tokenlean.tokens import TokenCounter
from tokenlean.transcript import Message, ToolCall


@dataclass(frozen=True, slots=True)
class Planned:
    """One tool result to replace: where it is, its original text, and the shortening."""

    index: int
    message_id: str | None
    handle: str
    original: str
    report: ShortenReport


def unseen_tool_results(view: Sequence[Message]) -> list[int]:
    """Indices of tool results after the last assistant turn (not yet sent to the model)."""
    last = max((i for i, m in enumerate(view) if m.role == "assistant"), default=-1)
    return [i for i in range(last + 1, len(view)) if view[i].role == "tool"]


def calls_by_id(view: Iterable[Message]) -> dict[str, ToolCall]:
    return {call.id: call for m in view for call in m.tool_calls if call.id}


def handle_for(message: Message) -> str:
    """A short, deterministic handle for a tool result's original."""
    key = f"{message.tool_call_id or message.id or ''}\n{message.text}"
    return "o" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:6]


def add_visible(seen: Seen, messages: Iterable[Message]) -> None:
    """Add the messages' text and tool-call arguments, as the model saw them, to ``seen``."""
    for message in messages:
        seen.add(message.text)
        for call in message.tool_calls:
            seen.add_all(_strings(call.args))


def _strings(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def plan_first_sight(
    view: Sequence[Message],
    *,
    eligible: Callable[[int, Message], bool],
    min_tokens: int,
    options: ShortenOptions,
    dedupe: bool = True,
    keep_originals: bool = True,
    tool_name: str | None = None,
    min_saving: float = 0.0,
    counter: TokenCounter | None = None,
) -> list[Planned]:
    """The first-sight replacements for ``view``'s unseen tool results, in order.

    ``keep_originals`` says whether the originals will be kept under their handles (markers
    then name the handle, and ``tool_name`` when the agent has a tool to read them); a
    shortening that saves less than ``min_saving`` of a result's tokens is not worth it.
    """
    count = counter.count if counter is not None else estimate_tokens
    calls = calls_by_id(view)
    notes = {call.id: m.text for m in view for call in m.tool_calls if call.id and m.text}
    candidates = [i for i in unseen_tool_results(view) if eligible(i, view[i])]
    if not candidates:
        return []
    current = list(view)
    seen = Seen(min_chars=options.seen_min_chars)
    add_visible(seen, view[: candidates[0]])
    done = candidates[0]
    planned: list[Planned] = []
    for i in candidates:
        add_visible(seen, current[done:i])
        done = i
        message = view[i]
        text = message.text
        if count(text) <= min_tokens:
            continue
        call = calls.get(message.tool_call_id or "")
        args: Mapping[str, Any] | None = call.args if call else None
        note = notes.get(message.tool_call_id or "")
        handle = handle_for(message)
        where = Retrieval(handle, tool_name) if keep_originals else Retrieval()
        report = shorten(
            text,
            query=args,
            context=note,
            seen=seen if dedupe else None,
            retrieval=where,
            counter=counter,
            options=options,
        )
        if report.changed and report.tokens_saved >= min_saving * report.tokens_before:
            planned.append(Planned(i, message.id, handle, text, report))
            current[i] = _with_text(message, report.text)
    return planned


def _with_text(message: Message, text: str) -> Message:
    return Message(
        role=message.role,
        content=text,
        id=message.id,
        name=message.name,
        tool_calls=message.tool_calls,
        tool_call_id=message.tool_call_id,
        status=message.status,
    )
