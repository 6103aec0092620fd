"""First-sight shortening of tool results over a neutral transcript: edits and originals.

Only tool results the model has not been sent yet (those after the last assistant turn) are
candidates, so a shortened result is the only version the model ever sees and every later
request repeats its bytes. The query of each result is its tool call's arguments; the lines of
every earlier message (as the model saw them) are the ``seen`` set that lets a result point
back to what it repeats instead of sending it again. A result that repeats a whole earlier result
of the same tool word for word (an agent polling, re-running a test that still fails, or looping)
is sent as a one-line pointer to it, at any size where the pointer is at most half the result.

:func:`plan_first_sight` is the core of
:class:`~tokenlean.langchain.ToolOutputShorteningMiddleware` and of the raw API adapters. It reads
a *window*: the messages from position ``offset`` on, where a :class:`SeenLog` already holds the
lines of the messages before it, so a long run is not re-read on every call. The log only ever
covers messages the model was sent (those never change), and the plan advances it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tokenlean.readback import TOOL_READ_BACK, ReadBack, has_way_back
from tokenlean.shorten._calls import writes_by_line
from tokenlean.shorten._core import shorten
from tokenlean.shorten._detect import view_content
from tokenlean.shorten._markers import Retrieval, repeat_marker
from tokenlean.shorten._options import ShortenSettings
from tokenlean.shorten._output_settings import (
    CAPABILITY,
    NEVER_SIMILAR,
    OutputShorteningSettings,
)
from tokenlean.shorten._report import Omission, Reason, ShortenReport
from tokenlean.shorten._seen import Seen, result_digest
from tokenlean.shorten._wrapped import readable
from tokenlean.store import Original, make_handle
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter
from tokenlean.transcript import Edit, Message, ToolCall, mark

__all__ = [
    "IN_PROMPT",
    "FirstSightPlan",
    "SeenLog",
    "add_visible",
    "in_prompt_only",
    "last_assistant",
    "plan_first_sight",
    "shorten",
    "unseen_tool_results",
]


@dataclass(slots=True)
class SeenLog:
    """The lines of a transcript's first ``upto`` messages, as the model saw them."""

    seen: Seen
    upto: int = 0

    @classmethod
    def new(cls, policy: OutputShorteningSettings) -> SeenLog:
        return cls(Seen(min_chars=policy.options.seen_min_chars))


@dataclass(frozen=True, slots=True)
class FirstSightPlan:
    """The edits to make (in order), the originals they replace, and each shortening's report."""

    edits: tuple[Edit, ...] = ()
    originals: tuple[Original, ...] = ()
    reports: tuple[ShortenReport, ...] = ()
    log: SeenLog | None = field(default=None, repr=False)


def unseen_tool_results(view: Sequence[Message]) -> list[int]:
    """Indices of tool results after the last assistant turn (not yet sent to the model)."""
    return [i for i in range(last_assistant(view) + 1, len(view)) if view[i].role == "tool"]


def last_assistant(view: Sequence[Message]) -> int:
    """The index of the last assistant turn (-1 when there is none)."""
    for index in range(len(view) - 1, -1, -1):
        if view[index].role == "assistant":
            return index
    return -1


def add_visible(seen: Seen, messages: Iterable[Message]) -> None:
    """Add the messages' text and tool-call arguments, as the model saw them, to ``seen``, and
    each whole text-only tool result under its call's id (a result wrapped in JSON adds the
    lines of the text inside)."""
    for message in messages:
        text = readable(message.text) if message.role == "tool" else message.text
        seen.add(text)
        content = view_content(text) if message.role == "tool" else None
        if content is not None:  # so a later view of the file, its numbers shifted, points here
            seen.add_view(content)
        for call in message.tool_calls:
            for text in _strings(call.args):
                seen.add(text)
                seen.add_view(text)  # lines the agent wrote: a view showing them points back
        if message.role == "tool" and message.tool_call_id and message.is_text_only:
            seen.add_result(result_digest(message.name or "", message.text), message.tool_call_id)


def _written(seen: Seen, turn: Message) -> frozenset[str]:
    """What ``turn``'s edits by line number wrote, as file views match it: never "already
    shown" in the views answering them. Such an edit's window is where the agent checks that
    its text landed where and as it meant (its depth, no line doubled or lost); later views
    point back to it. A search-and-replace edit's arguments say that already."""
    calls = [call for call in turn.tool_calls if writes_by_line(call.args)]
    keys = [seen.view_lines(text) for call in calls for text in _strings(call.args)]
    return frozenset().union(*keys)


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
    window: Sequence[Message],
    policy: OutputShorteningSettings,
    *,
    offset: int = 0,
    log: SeenLog | None = None,
    read_back: ReadBack | None = TOOL_READ_BACK,
    backoff: Mapping[str, int] | None = None,
) -> FirstSightPlan:
    """The first-sight shortenings of the unseen tool results in ``window``.

    ``window`` holds the transcript from position ``offset`` on, the last assistant turn
    included; ``log`` holds the lines of the first ``log.upto`` messages (``offset <= log.upto``;
    ``None``: start from nothing, which needs ``offset == 0`` unless dedupe is off).
    ``read_back`` names each original's handle and says how markers point to it. A marker names
    only a way back the agent has in the request: with no read-back, or one naming no tool
    (:func:`has_way_back`), nothing that would need recovering is cut, and a result is sent as
    a pointer only when it repeats an earlier one word for word (the agent still sees that
    one). Each result is shortened against
    everything before it as the model will see it, earlier shortenings included. The returned
    plan's ``log`` covers every message before the unseen results, ready for the next call.
    ``backoff`` counts, per tool, how often the agent read an original of that tool back: its
    results are shortened less (see :meth:`OutputShorteningSettings.options_for`).
    """
    first = last_assistant(window) + 1
    log = _advanced(log, window, policy, offset=offset, first=first) if policy.dedupe else None
    calls = _calls(window[:first])
    candidates = [
        i
        for i in range(first, len(window))
        if policy.eligible(window[i]) and (policy.orphans or window[i].tool_call_id in calls)
    ]
    if not candidates:
        return FirstSightPlan(log=log)
    seen = None
    if log is not None:  # a view answering the newest calls is where the agent checks them
        written = _written(log.seen, window[first - 1]) if first else frozenset()
        seen = Seen(min_chars=log.seen.min_chars, parent=log.seen, unmatched=written)
    current, done = list(window), first
    edits: list[Edit] = []
    originals: list[Original] = []
    reports: list[ShortenReport] = []
    for i in candidates:
        if seen is not None:
            add_visible(seen, current[done:i])
            done = i
        message = window[i]
        shortened = _first_sight(message, policy, calls, seen, read_back, backoff)
        if shortened is None:
            continue
        report, handle = shortened
        content = report.text if isinstance(message.content, str) else _text_block(report.text)
        current[i] = replace(message, content=content)
        edits.append(_edit(offset + i, message, content, handle, report))
        originals.append(Original(handle, message.text, message.name, message.tool_call_id))
        reports.append(report)
    return FirstSightPlan(tuple(edits), tuple(originals), tuple(reports), log)


def _advanced(
    log: SeenLog | None,
    window: Sequence[Message],
    policy: OutputShorteningSettings,
    *,
    offset: int,
    first: int,
) -> SeenLog:
    """``log`` (a new one for ``None``) advanced over the window's messages before its unseen
    results, the first ``first`` of it."""
    log = log if log is not None else SeenLog.new(policy)
    if not offset <= log.upto <= offset + first or (log.upto == 0 and offset > 0):
        raise ValueError(f"the log covers {log.upto} messages; the window starts at {offset}")
    add_visible(log.seen, window[log.upto - offset : first])
    log.upto = offset + first
    return log


def _first_sight(
    message: Message,
    policy: OutputShorteningSettings,
    calls: Mapping[str, tuple[ToolCall, str | None]],
    seen: Seen | None,
    read_back: ReadBack | None,
    backoff: Mapping[str, int] | None,
) -> tuple[ShortenReport, str] | None:
    """The result as first sent (a pointer to an earlier copy, or shortened) and its
    original's handle; ``None`` when it goes whole."""
    call, note = calls.get(message.tool_call_id or "", (None, None))
    options = policy.options_for((backoff or {}).get(message.name or "", 0))
    if options is None:
        return None
    text = message.text
    # the handle (a hash of the whole text) only once the result may be cut
    report, handle = _repeat(message, text, policy, seen), None
    tokens = policy.count(text) if report is None else 0
    if tokens > policy.min_tokens:
        handle = _handle(message, text, read_back)
        retrieval = Retrieval(in_prompt=True)
        if has_way_back(read_back):
            retrieval = Retrieval(handle, read_back.tool)  # type: ignore[union-attr]
        counter = _Counted(text, tokens, policy.counter or DEFAULT_COUNTER)
        report = _shorten_one(message, policy, options, call, note, seen, retrieval, counter)
    if report is None:
        return None
    return report, handle or _handle(message, text, read_back)


def _calls(messages: Sequence[Message]) -> dict[str, tuple[ToolCall, str | None]]:
    """Tool calls by id with the text of the turn that made them (the newest turn wins)."""
    out: dict[str, tuple[ToolCall, str | None]] = {}
    for message in reversed(messages):
        if message.role != "assistant":
            continue
        for call in message.tool_calls:
            if call.id and call.id not in out:
                out[call.id] = (call, message.text or None)
        break  # unseen results answer the last turn's calls
    return out


def _handle(message: Message, text: str, read_back: ReadBack | None) -> str:
    name = message.tool_call_id or message.id or ""
    return read_back.handle("o", text, name) if read_back else make_handle("o", name, text)


def _shorten_one(
    message: Message,
    policy: OutputShorteningSettings,
    options: ShortenSettings,
    call: ToolCall | None,
    note: str | None,
    seen: Seen | None,
    retrieval: Retrieval,
    counter: TokenCounter,
) -> ShortenReport | None:
    """The result shortened, when that saves at least ``min_saving`` of it (the caller checked
    it is over ``min_tokens``). With no way back (``retrieval.in_prompt``) only what the prompt
    still shows is left out: nothing is cut for size."""
    report = shorten(
        message.text,
        query=call.args if call is not None else None,
        context=note,
        seen=seen,
        retrieval=retrieval,
        counter=counter,
        options=in_prompt_only(options) if retrieval.in_prompt else options,
    )
    if not report.changed or report.tokens_saved < policy.min_saving * report.tokens_before:
        return None
    if retrieval.in_prompt and not IN_PROMPT.issuperset(o.reason for o in report.omissions):
        return None
    return report


#: Omissions whose lines the prompt still shows (lines shown earlier, the line above repeated,
#: a traceback's copy above) or that never need recovering (caret lines under a code line).
IN_PROMPT: frozenset[Reason] = frozenset({"seen", "repeat", "trace", "caret"})
_UNBOUNDED = 1 << 30
#: Every budget and "keep whole up to" limit of :class:`ShortenSettings`.
_LIFTED = (
    "max_tokens", "code_max_tokens", "long_line_chars", "json_max_items", "json_max_string",
    "json_keep_tokens", "text_keep_tokens", "listing_keep_tokens", "view_keep_tokens",
    "file_keep_tokens", "script_max_tokens", "page_lines",
    "listing_keep_lines",
)  # fmt: skip


def in_prompt_only(options: ShortenSettings) -> ShortenSettings:
    """``options`` with every budget and every "keep whole up to" limit lifted and similar
    lines never collapsed: what is left to leave out is what the prompt still shows."""
    lifted = dict.fromkeys(_LIFTED, _UNBOUNDED)
    return replace(
        options, **lifted, code_keep_percent=100, text_keep_percent=100, similar_run=NEVER_SIMILAR
    )


class _Counted:
    """``counter``, told the count of the one text it was already asked about (a result is
    counted once on its way through the threshold and the shortener)."""

    __slots__ = ("counter", "text", "tokens")

    def __init__(self, text: str, tokens: int, counter: TokenCounter) -> None:
        self.text, self.tokens, self.counter = text, tokens, counter

    def count(self, text: str) -> int:
        return self.tokens if text == self.text else self.counter.count(text)


def _repeat(
    message: Message, text: str, policy: OutputShorteningSettings, seen: Seen | None
) -> ShortenReport | None:
    """A pointer to an earlier result of the same tool with exactly this ``text`` (the
    message's), when the model was shown that one whole and the pointer costs at most half of
    the result."""
    if seen is None or not text:
        return None
    earlier = seen.result(result_digest(message.name or "", text))
    if earlier is None or earlier == message.tool_call_id:
        return None
    pointer = repeat_marker(message.name or "tool", earlier)
    before, after = policy.count(text), policy.count(pointer)
    if 2 * after > before:
        return None
    lines = text.count("\n") + 1
    return ShortenReport(pointer, "repeat", before, after, (Omission("seen", lines, 1, lines),))


def _text_block(text: str) -> tuple[Mapping[str, Any], ...]:
    return ({"type": "text", "text": text},)


def _edit(index: int, message: Message, content: Any, handle: str, report: ShortenReport) -> Edit:
    entry = {
        "shortened": True,
        "handle": handle,
        "kind": report.kind,
        "tokens_before": report.tokens_before,
        "tokens_after": report.tokens_after,
    }
    return Edit(
        index=index,
        message_id=message.id,
        new_content=content,
        reason=f"shortened {report.kind} at first sight",
        tokens_before=report.tokens_before,
        tokens_after=report.tokens_after,
        metadata=mark(CAPABILITY, entry),
    )
