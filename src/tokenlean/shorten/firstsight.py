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
from dataclasses import dataclass, replace
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


@dataclass(frozen=True, slots=True)
class FirstSightPolicy:
    """How :func:`plan_first_sight` shortens (the middleware's settings, framework-free)."""

    min_tokens: int
    options: ShortenOptions
    dedupe: bool = True
    keep_originals: bool = True
    tool_name: str | None = None
    min_saving: float = 0.0
    counter: TokenCounter | None = None


def plan_first_sight(
    view: Sequence[Message],
    policy: FirstSightPolicy,
    eligible: Callable[[int, Message], bool],
) -> list[Planned]:
    """The first-sight replacements for ``view``'s unseen tool results, in order.

    With ``policy.keep_originals`` the markers name each original's handle (and
    ``policy.tool_name``, the tool that reads it back); a shortening that saves less than
    ``policy.min_saving`` of a result's tokens is not worth it. Each result is shortened
    against everything before it as the model will see it, earlier shortenings included.
    """
    candidates = [i for i in unseen_tool_results(view) if eligible(i, view[i])]
    if not candidates:
        return []
    calls = calls_by_id(view)
    notes = {call.id: m.text for m in view for call in m.tool_calls if call.id and m.text}
    seen = Seen(min_chars=policy.options.seen_min_chars) if policy.dedupe else None
    current, done = list(view), 0
    planned: list[Planned] = []
    for i in candidates:
        if seen is not None:
            add_visible(seen, current[done:i])
            done = i
        key = view[i].tool_call_id or ""
        call = calls.get(key)
        item = _plan_one(view[i], i, policy, call.args if call else None, notes.get(key), seen)
        if item is not None:
            planned.append(item)
            current[i] = replace(view[i], content=item.report.text)
    return planned


def _plan_one(
    message: Message,
    index: int,
    policy: FirstSightPolicy,
    args: Mapping[str, Any] | None,
    note: str | None,
    seen: Seen | None,
) -> Planned | None:
    text = message.text
    count = policy.counter.count if policy.counter is not None else estimate_tokens
    if count(text) <= policy.min_tokens:
        return None
    handle = handle_for(message)
    where = Retrieval(handle, policy.tool_name) if policy.keep_originals else Retrieval()
    report = shorten(
        text,
        query=args,
        context=note,
        seen=seen,
        retrieval=where,
        counter=policy.counter,
        options=policy.options,
    )
    if not report.changed or report.tokens_saved < policy.min_saving * report.tokens_before:
        return None
    return Planned(index, message.id, handle, text, report)
