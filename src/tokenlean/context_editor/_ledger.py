"""The request as the context editor sends it, kept up to date one message at a time.

A :class:`RequestLedger` holds the neutral view of a transcript, each message's tokens as it is
sent under the current cleared set, and the indexes the planner needs (tool results by call id,
the calls that made them, the assistant turns). Messages are only ever appended; growing the
cleared set re-counts just the messages it changes. So a middleware that keeps one ledger per
thread does work proportional to what is new on each call, and
:func:`~tokenlean.context_editor._plan.plan_clearing` builds a fresh one for a one-off plan: both
take the very same decisions.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tokenlean.context_editor._clearing import apply_clearing
from tokenlean.context_editor._config import Clearing
from tokenlean.tokens import TokenCounter, message_tokens
from tokenlean.transcript import Message, ToolCall

__all__ = ["Judged", "RequestLedger"]


@dataclass(frozen=True, slots=True)
class Judged:
    """A tool result's fitness to be cleared, worked out once (it never changes)."""

    call: ToolCall
    length: int
    saved: int
    clearing: Clearing


@dataclass(slots=True)
class RequestLedger:
    """A growing transcript, each message's tokens as sent, and where results and calls are."""

    counter: TokenCounter
    view: list[Message] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    total: int = 0
    cleared: dict[str, Clearing] = field(default_factory=dict)
    results: list[int] = field(default_factory=list)  # tool results, in order
    result_at: dict[str, list[int]] = field(default_factory=dict)  # call id -> results
    call_at: dict[str, list[int]] = field(default_factory=dict)  # call id -> assistant turns
    replies: list[int] = field(default_factory=list)  # assistant turns
    open: list[int] = field(default_factory=list)  # results that may still be cleared
    # results too small to clear while the placeholder names the retrieval tool (longer)
    parked: list[int] = field(default_factory=list)
    judged: dict[tuple[int, bool], Judged | None] = field(default_factory=dict)
    elsewhere: set[str] = field(default_factory=set)  # cleared by LangChain's own editor
    dirty: set[int] = field(default_factory=set)  # messages whose sent form changed
    previous: Mapping[str, Clearing] | None = None  # the cleared set last planned from
    # the planner's last scan of ``open`` (see ``plan._candidates``); None when it must rescan
    scan: object | None = None
    _sums: list[int] = field(default_factory=lambda: [0])  # _sums[i]: tokens before message i

    def extend(self, messages: Iterable[Message]) -> None:
        """Append messages (sent under the current cleared set)."""
        for message in messages:
            index = len(self.view)
            self.view.append(message)
            count = message_tokens(self._as_sent(message), self.counter)
            self.tokens.append(count)
            self.total += count
            if message.role == "assistant":
                self.replies.append(index)
                for call in message.tool_calls:
                    if call.id in self.call_at:  # pairings may change: judge everything again
                        self.scan = None
                    self.call_at.setdefault(call.id, []).append(index)
            elif message.role == "tool":
                self.results.append(index)
                self.open.append(index)
                if (message.tool_call_id or "") in self.result_at:
                    self.scan = None
                self.result_at.setdefault(message.tool_call_id or "", []).append(index)
                marker = message.metadata.get("context_editing")
                if isinstance(marker, Mapping) and marker.get("cleared"):
                    self.elsewhere.add(message.tool_call_id or "")

    def set_cleared(self, cleared: Mapping[str, Clearing]) -> list[int]:
        """Send the messages under ``cleared`` from now on; the indices whose form changed
        (also added to :attr:`dirty`)."""
        old, keys = self.cleared, cleared.keys() | self.cleared.keys()
        changed_ids = {k for k in keys if cleared.get(k) != old.get(k)}
        self.cleared = dict(cleared)
        inputs = {k for k in changed_ids if _clears_inputs(cleared.get(k), old.get(k))}
        changed = self._recount(changed_ids, inputs)
        if changed:  # any open result may be cleared now (one sharing an id too): look at all
            self.open = [i for i in self.open if self.view[i].tool_call_id not in self.cleared]
            self.parked = [i for i in self.parked if self.view[i].tool_call_id not in self.cleared]
        return changed

    def add_cleared(self, new: Mapping[str, Clearing]) -> list[int]:
        """:meth:`set_cleared` for a cleared set that only grows by ``new`` (no full compare).

        Only the results of ``new`` leave the open lists: a result that shares an id with
        another may stay in them, but it pairs with no call, so it is never a candidate.
        """
        old = self.cleared
        self.cleared = {**old, **new}
        changed = self._recount(new, {k for k, c in new.items() if _clears_inputs(c, old.get(k))})
        for key in new:
            for index in self.result_at.get(key, ()):
                _discard(self.open, index)
                _discard(self.parked, index)
        return changed

    def _recount(self, results: Iterable[str], inputs: Iterable[str]) -> list[int]:
        """Count again the results of the ids ``results`` and the calls of the ids ``inputs``."""
        changed = sorted(
            {i for key in results for i in self.result_at.get(key, ())}
            | {i for key in inputs for i in self.call_at.get(key, ())}
        )
        for index in changed:
            count = message_tokens(self._as_sent(self.view[index]), self.counter)
            self.total += count - self.tokens[index]
            self.tokens[index] = count
        self.dirty.update(changed)
        if changed:
            self.scan = None
            del self._sums[changed[0] + 1 :]
        return changed

    def before(self, index: int) -> int:
        """Tokens of the messages before ``index``, as sent."""
        sums = self._sums
        if len(sums) <= index:  # summed in C: a clearing deep in the prompt cuts the sums short
            last = len(sums) - 1
            sums[last:] = itertools.accumulate(self.tokens[last:index], initial=sums[last])
        return sums[index]

    def unique(self, call_id: str) -> bool:
        """Whether exactly one call and one result use ``call_id`` (so they pair unambiguously)."""
        results, calls = self.result_at.get(call_id, ()), self.call_at.get(call_id, ())
        return bool(call_id) and len(results) == 1 and len(calls) == 1

    def call_of(self, index: int) -> ToolCall | None:
        """The tool call a result answers, when the pairing is unambiguous."""
        call_id = self.view[index].tool_call_id or ""
        if not self.unique(call_id):
            return None
        turn = self.view[self.call_at[call_id][0]]
        return next(c for c in turn.tool_calls if c.id == call_id)

    def sent(self) -> Sequence[Message]:
        """Every message as it is sent (for estimators that read the whole request)."""
        return apply_clearing(self.view, self.cleared)

    def _as_sent(self, message: Message) -> Message:
        if not self.cleared:
            return message
        return apply_clearing((message,), self.cleared)[0]


def _clears_inputs(*entries: Clearing | None) -> bool:
    """Whether any of ``entries`` clears its call's arguments (the call is sent differently
    only then: otherwise clearing a result leaves its call's tokens as they are)."""
    return any(entry is not None and entry.clear_inputs for entry in entries)


def _discard(indices: list[int], index: int) -> None:
    """Remove ``index`` from the sorted ``indices`` if it is there."""
    at = bisect.bisect_left(indices, index)
    if at < len(indices) and indices[at] == index:
        del indices[at]
