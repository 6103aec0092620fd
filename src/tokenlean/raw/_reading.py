"""Reading a body's list of items into the view, once per item when the bodies are never
mutated (:func:`frozen_bodies`: the proxy's parsed bodies, shared by the requests that re-send
them): each list's reading is kept by its first item, so a re-sent history reads only the items
that are new or changed, for every API. A message of a list of messages (Anthropic, OpenAI
Chat) is read alone, so its reading is kept by the message itself too."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from tokenlean._caches import held_bytes
from tokenlean._identity import ByIdentity, same_objects
from tokenlean.raw._view import (
    FROZEN,
    BodyReader,
    MessageRead,
    MessageReader,
    RawView,
    ViewBuilder,
)
from tokenlean.transcript import Message

__all__ = ["ItemReading", "frozen_bodies", "messages_reader", "read_items"]

#: Each message's reading, by the message object itself (only for frozen bodies): a history
#: re-sent to the proxy is read once, and each later request reads only its new messages.
_READS: ByIdentity[MessageRead] = ByIdentity(max_entries=200_000, max_bytes=64 * 2**20)


@contextmanager
def frozen_bodies() -> Iterator[None]:
    """Within the block, the bodies read hold message objects that are never mutated (the
    proxy's parsed bodies, shared by the requests that re-send them): each message's reading is
    kept and reused for the very same object at the same place. An SDK user's messages may be
    changed in place between calls, so they are read afresh."""
    token = FROZEN.set(True)
    try:
        yield
    finally:
        FROZEN.reset(token)


def _read_once(
    out: ViewBuilder, reader: MessageReader, i: int, message: Mapping[str, Any]
) -> int | None:
    """Add ``message``'s reading to ``out``, read now or kept; the bytes the message holds
    when it was read now (``None`` when kept)."""
    read = _READS.get(message)
    weight = None
    if read is None or read.index != i or read.reader is not reader:
        own = ViewBuilder()
        reader(own, i, message)
        read = MessageRead(reader, i, tuple(own.messages), own.results, own.calls)
        held = sum(len(m.content) if isinstance(m.content, str) else 64 for m in read.messages)
        # the entry keeps the message alive too, images and all: charged for it
        weight = held_bytes(message)
        _READS.put(message, read, 256 * (1 + len(read.messages)) + held + weight)
    out.extend(read)
    return weight


class ItemReading(Protocol):
    """One pass of a reader over a body's list of items, an item at a time. A reader that
    carries something from one item to the next (an assistant turn spread over several items,
    the calls it waits for answers to) says after each item whether it is at rest there: every
    item read so far is in the view as it will stay, and what it carries on is ``rest()``."""

    def item(self, out: ViewBuilder, j: int, item: Any) -> int | None:
        """Read item ``j`` into ``out``; the bytes the item holds if the reading measured
        them (else ``None``)."""

    def end(self, out: ViewBuilder) -> None:
        """The list is over: add what is still carried."""

    def rest(self) -> tuple[Any, ...] | None:
        """What is carried to the next item (immutable), or ``None`` when not at rest."""

    def resume(self, state: tuple[Any, ...]) -> None:
        """Carry on from a rest whose ``rest()`` was ``state``."""


@dataclass(slots=True)
class _Rests:
    """Where a reading of a list was at rest: after how many items (``counts``), how many view
    messages they made (``ends``), the bytes those items and their reading hold (``charges``),
    and what the reading carried on from there (``states``)."""

    counts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    charges: list[int] = field(default_factory=list)
    states: list[tuple[Any, ...]] = field(default_factory=list)

    def add(
        self, count: int, messages: Sequence[Message], state: tuple[Any, ...], items: int
    ) -> None:
        """A rest after ``count`` items, the view's ``messages`` so far, and the bytes the items
        read since the last rest hold (``items``)."""
        end = self.ends[-1] if self.ends else 0
        held = items + _charge(messages[end:]) + (_LIST_BYTES_PER_MESSAGE if state else 0)
        self.counts.append(count)
        self.ends.append(len(messages))
        self.charges.append((self.charges[-1] if self.charges else 0) + held)
        self.states.append(state)

    def first(self, n: int) -> _Rests:
        return _Rests(self.counts[:n], self.ends[:n], self.charges[:n], self.states[:n])


@dataclass(frozen=True, slots=True)
class _ListRead:
    """What a reading of ``kind`` made of a whole list: its items (the objects), its view, and
    where the reading was at rest."""

    kind: object
    items: tuple[Any, ...]
    view: RawView
    rests: _Rests


#: Each frozen list's reading, by its first item object: a history re-sent with new items
#: after it (and maybe its newest item changed: a cache breakpoint moved), its items the very
#: objects of the last time, takes the view of those it shares, up to the last rest among them,
#: in one step and reads only the others (about 1 us an item otherwise, a millisecond on a long
#: history).
_LISTS: ByIdentity[_ListRead] = ByIdentity(max_entries=4096, max_bytes=128 * 2**20)
#: Bytes charged a kept list per view message beyond its text (its item's place, its end and
#: charge, the view's message and slots; a rest's state too), and per character of its text
#: (the message's own objects, and the view's copy), on top of what its items hold (images and
#: all: the other memos may drop theirs first).
_LIST_BYTES_PER_MESSAGE = 256
_LIST_BYTES_PER_CHAR = 3


def _resume(out: ViewBuilder, kind: object, items: list[Any]) -> _Rests:
    """The rests of the last list of ``kind`` that ``items`` begins with, up to the last one
    within what the two share (the same objects, in the same places), that part of its view
    added to ``out``."""
    kept = _LISTS.get(items[0])
    if kept is None or kept.kind is not kind:
        return _Rests()
    n = bisect_right(kept.rests.counts, same_objects(kept.items, items))
    if not n:
        return _Rests()
    view, cut = kept.view, kept.rests.ends[n - 1]
    if cut == len(view.messages):
        out.messages += view.messages
        out.results.update(view.results)
        out.calls.update(view.calls)
    else:
        out.messages += view.messages[:cut]
        out.results.update({i: slot for i, slot in view.results.items() if i < cut})
        out.calls.update({key: slot for key, slot in view.calls.items() if key[0] < cut})
    return kept.rests.first(n)


def _charge(messages: Sequence[Message]) -> int:
    """What a kept list is charged for the view's ``messages`` of one of its items."""
    chars = sum(len(m.content) if isinstance(m.content, str) else 64 for m in messages)
    return _LIST_BYTES_PER_MESSAGE * len(messages) + _LIST_BYTES_PER_CHAR * chars


def read_items(items: list[Any], reading: ItemReading, kind: object) -> RawView:
    """The view of a body's ``items``, read by ``reading`` (a new one for each list; ``kind``
    names the reader: only a list read by the same kind is resumed). In frozen bodies, the
    items a recent list began with too are taken from its view at once, up to the last rest
    among them, and the reading resumes from there."""
    out = ViewBuilder()
    frozen = FROZEN.get() and bool(items)
    rests = _resume(out, kind, items) if frozen else _Rests()
    if rests.states:
        reading.resume(rests.states[-1])
    held = 0  # the bytes the items read since the last rest hold (the list keeps them alive)
    for j in range(rests.counts[-1] if rests.counts else 0, len(items)):
        measured = reading.item(out, j, items[j])
        if frozen:
            held += held_bytes(items[j]) if measured is None else measured
            if (state := reading.rest()) is not None:
                rests.add(j + 1, out.messages, state, held)
                held = 0
    reading.end(out)
    view = out.build()
    if frozen:
        end = rests.ends[-1] if rests.ends else 0
        charge = (rests.charges[-1] if rests.charges else 0) + held + _charge(view.messages[end:])
        _LISTS.put(items[0], _ListRead(kind, tuple(items), view, rests), charge)
    return view


class _Messages:
    """The reading of a list of messages that each stand alone (at rest after each one)."""

    __slots__ = ("frozen", "read_message")

    def __init__(self, read_message: MessageReader) -> None:
        self.read_message = read_message
        self.frozen = FROZEN.get()

    def item(self, out: ViewBuilder, j: int, item: Any) -> int | None:
        if not isinstance(item, Mapping):
            return None  # anything else in the list is skipped
        if self.frozen:
            return _read_once(out, self.read_message, j, item)
        self.read_message(out, j, item)
        return None

    def end(self, out: ViewBuilder) -> None:
        pass

    def rest(self) -> tuple[Any, ...]:
        return ()

    def resume(self, state: tuple[Any, ...]) -> None:
        pass


def messages_reader(read_message: MessageReader) -> BodyReader:
    """The reader of bodies that hold a list of ``messages`` (Anthropic, OpenAI Chat
    Completions): each message that is a mapping ``read_message`` adds to the view with its
    index, anything else in the list is skipped; ``None`` for a body with no message list."""

    def read(body: Mapping[str, Any]) -> RawView | None:
        messages = body.get("messages")
        if not isinstance(messages, list):
            return None
        return read_items(messages, _Messages(read_message), read_message)

    return read
