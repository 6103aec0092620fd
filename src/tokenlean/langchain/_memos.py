"""Per-thread memos: a middleware's work on a growing transcript, carried from one call to the
next instead of redone (:class:`PrefixMemo`), and the two kinds every middleware keeps: its
steps (:class:`StepMemo`) and its token counts (:class:`TokenMemo`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langchain_core.messages import BaseMessage

from tokenlean.langchain._adapter import ViewCache, views_of
from tokenlean.langchain._helpers import last_ai_index, thread_scope
from tokenlean.loop_guard import StepScan
from tokenlean.tokens import TokenCounter, message_tokens
from tokenlean.transcript import Message

__all__ = ["Held", "PrefixMemo", "StepMemo", "TokenMemo"]

T = TypeVar("T")


@dataclass(slots=True)
class Held(Generic[T]):
    """A thread's remembered work: built on the messages ``keep`` (held, so none is reused)."""

    keep: list[Any]
    value: T

    @property
    def n(self) -> int:
        return len(self.keep)


class PrefixMemo(Generic[T]):
    """Per-thread work on the messages a call has already read, carried to the next call.

    A middleware stores a value computed from a prefix of the transcript; the next call gets it
    back only if its transcript starts with the very same message objects, or equal copies (a
    pointer comparison each, not a re-read), so anything that changed or removed one of them
    simply makes the middleware start over (the results are the same; only the time differs).
    Taking an entry removes it until it is put back, so two calls of one thread at once never
    share a value. At most ``max_threads`` threads are remembered.
    """

    def __init__(self, *, max_threads: int = 256) -> None:
        self._entries: OrderedDict[str | None, Held[T]] = OrderedDict()
        self._max = max_threads
        self._lock = threading.Lock()

    def take(self, scope: str | None, messages: Sequence[Any]) -> Held[T] | None:
        """The work remembered for ``scope`` when ``messages`` starts with its messages."""
        with self._lock:
            held = self._entries.pop(scope, None)
        if held is None or len(messages) < held.n or not _starts_with(messages, held.keep):
            return None
        if held.keep and held.keep[-1] is not messages[held.n - 1]:
            # Equal copies (after a checkpoint is loaded, every message is one): hold these
            # objects, so the next calls compare pointers, not contents.
            held.keep = list(messages[: held.n])
        return held

    def put(
        self, scope: str | None, messages: Sequence[Any], n: int, value: T, *, reuse: Held[T] | None
    ) -> None:
        """Remember ``value`` as built on ``messages[:n]`` (``reuse``: what was taken, whose
        message list is extended rather than copied)."""
        keep = reuse.keep if reuse is not None and reuse.n <= n else []
        keep.extend(messages[len(keep) : n])
        with self._lock:
            self._entries[scope] = Held(keep, value)
            self._entries.move_to_end(scope)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def _starts_with(messages: Sequence[Any], keep: list[Any]) -> bool:
    """Whether ``messages`` starts with the items of ``keep``: the same objects or equal copies.

    List comparison runs in C and takes an object for equal to itself without calling its
    ``__eq__``, so a transcript that starts with the very same objects costs a pointer
    comparison each. ``keep <= messages`` does that without copying the prefix (a copy touches
    every message object, which late in a long run costs more than the comparison): it is true
    when every kept item equals its counterpart and ``messages`` is at least as long, and raises
    ``TypeError`` at the first pair that differs, since messages have no order.
    """
    if type(messages) is list and keep and isinstance(keep[-1], BaseMessage):
        try:
            return keep <= messages
        except TypeError:
            return False
    start = messages[: len(keep)]
    return (start if isinstance(start, list) else list(start)) == keep


@dataclass(slots=True)
class _Scanned:
    settled: StepScan  # the steps of the messages before the newest AI message
    tail: list[BaseMessage]  # the messages from there on, as read last call
    views: list[Message]  # and their neutral views
    read: StepScan | None = None  # ``settled`` continued over ``tail``: what last call returned


class StepMemo:
    """The agent's steps so far, per thread; those before the newest AI message are complete
    (their results came in) and are carried from call to call instead of being rebuilt. The
    newest turn is read again each call (its results may still be coming in), but a message
    already read then is not converted again, and once a newer turn comes the steps read from
    it are kept as they are (the same objects, so what was worked out about them still holds).
    Messages are converted through ``views``, the view cache of the middleware that owns it."""

    def __init__(self, views: ViewCache) -> None:
        self._memo: PrefixMemo[_Scanned] = PrefixMemo()
        self._views = views

    def scan(self, messages: Sequence[BaseMessage]) -> StepScan:
        boundary = max(0, last_ai_index(messages))
        scope = thread_scope()
        hit = self._memo.take(scope, messages)
        if hit is None or hit.n > boundary:
            hit = None
        start, known = (hit.n, hit.value) if hit is not None else (0, _Scanned(StepScan(), [], []))
        if known.read is not None and list(messages[start:boundary]) == known.tail:
            # The turn read last call is now settled, its results all in: keep its steps.
            settled = known.settled.settle(known.read)
            views = views_of(messages, boundary, cache=self._views)
        else:
            views = _reusing(known, messages, start, self._views)
            settled = known.settled.extend(views[: boundary - start])
            views = views[boundary - start :]
        read = settled.extend(views, settled=False)
        self._memo.put(
            scope,
            messages,
            boundary,
            _Scanned(settled, list(messages[boundary:]), views, read),
            reuse=hit,
        )
        return read


def _reusing(
    known: _Scanned, messages: Sequence[BaseMessage], start: int, cache: ViewCache
) -> list[Message]:
    """The views of ``messages[start:]``, taken from ``known`` for the very same objects."""
    views: list[Message] = []
    for offset, message in enumerate(messages[start:]):
        if offset < len(known.tail) and known.tail[offset] is message:
            views.append(known.views[offset])
        else:
            views.append(cache.view(message))
    return views


class TokenMemo:
    """Tokens of a thread's messages, counted once each and carried from call to call (the
    messages converted through ``views``, the view cache of the middleware that owns it)."""

    def __init__(self, counter: TokenCounter, views: ViewCache) -> None:
        self.counter = counter
        self._memo: PrefixMemo[int] = PrefixMemo()
        self._views = views

    def count(self, messages: Sequence[BaseMessage]) -> int:
        scope = thread_scope()
        hit = self._memo.take(scope, messages)
        start, known = (hit.n, hit.value) if hit is not None else (0, 0)
        views = views_of(messages, start, cache=self._views)
        total = known + sum(message_tokens(m, self.counter) for m in views)
        self._memo.put(scope, messages, len(messages), total, reuse=hit)
        return total
