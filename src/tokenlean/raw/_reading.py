"""Reading a body's list of items into the view, each item once, for every API: each list's
reading is kept, so a re-sent history reads only the items that are new or changed.

When the bodies are never mutated (:func:`frozen_bodies`: the proxy's parsed bodies, shared by
the requests that re-send them), a list is kept by an item object (its second, where
conversations that open alike part: :func:`~tokenlean._identity.branch`) and its items are
compared as the very objects; a message of a list of messages (Anthropic, OpenAI Chat) is read
alone, so its reading is kept by the message itself too. Other bodies (an SDK user's, which may
be changed in place between calls; the LiteLLM plug-in's, new objects on every request) are
kept by their items' content: each item's ``marshal`` bytes, and the items are read from a
private copy, so nothing kept points into a caller's objects."""

from __future__ import annotations

import marshal
import operator
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from itertools import takewhile
from typing import Any, Protocol, cast

from tokenlean._caches import BoundedLru, Openings, content_key, held_bytes
from tokenlean._identity import ByIdentity, branch, leading, same_objects
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
    """What a reading of ``kind`` made of a whole list: its items (the objects, or their
    content keys), its view, and where the reading was at rest."""

    kind: object
    items: tuple[Any, ...]
    view: RawView
    rests: _Rests

    def length(self) -> int:
        return len(self.items)


#: Each frozen list's reading, by its second item object (its first when it has only one:
#: :func:`branch`; several lists under one, each conversation that goes on alike its own): a
#: history re-sent with new items after it (and maybe its newest item changed: a cache
#: breakpoint moved), its items the very objects of the last time, takes the view of those it
#: shares, up to the last rest among them, in one step and reads only the others (about 1 us an
#: item otherwise, a millisecond on a long history).
_LISTS: Openings[_ListRead] = Openings(
    ByIdentity(max_entries=4096, max_bytes=128 * 2**20), _ListRead.length
)
#: Bytes charged a kept list per view message beyond its text (its item's place, its end and
#: charge, the view's message and slots; a rest's state too), and per character of its text
#: (the message's own objects, and the view's copy), on top of what its items hold (images and
#: all: the other memos may drop theirs first).
_LIST_BYTES_PER_MESSAGE = 256
_LIST_BYTES_PER_CHAR = 3


#: Each list's reading by its items' content (bodies that may be mutated), by its first two
#: items' keys: a history re-sent as new objects (the LiteLLM plug-in's, an SDK user's list
#: copied or rebuilt for each call) is read only from where its content first differs. Bounded
#: as the lists by object; each is charged its keys too (about its size in JSON).
_CONTENTS: Openings[_ListRead] = Openings(
    BoundedLru(max_entries=1024, max_bytes=128 * 2**20), _ListRead.length
)
_KEY_BYTES = 64  # a key's own object, beyond its bytes
_KEYED = partial(operator.is_not, None)


class _ByObject:
    """The items of a frozen body: kept and compared as the very objects."""

    __slots__ = ("found", "items", "keyed")

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.keyed = len(items)  # items whose reading may be kept
        self.found: tuple[_ListRead | None, int] = (None, 0)  # the kept list, items shared

    def kept(self, kind: object) -> tuple[_ListRead | None, int]:
        """The kept list of ``kind`` these items begin like, and how many items they share."""

        def shared(kept: _ListRead) -> int:
            return same_objects(kept.items, self.items) if kept.kind is kind else 0

        kept, same = _LISTS.find(branch(self.items), shared)
        if kept is None or kept.kind is not kind:
            return None, 0
        self.found = kept, same
        return kept, same

    def source(self, j: int) -> Any:
        """What item ``j`` is read from."""
        return self.items[j]

    def held(self, j: int, measured: int | None) -> int:
        """What keeping item ``j`` costs (``measured``: its bytes, if its reading measured them)."""
        return held_bytes(self.items[j]) if measured is None else measured

    def keep(self, kind: object, view: RawView, rests: _Rests, charge: int) -> None:
        """Keep the reading of these items (``view``, ``rests``), charged ``charge`` bytes."""
        read = _ListRead(kind, tuple(self.items), view, rests)
        _LISTS.put(branch(self.items), read, charge, *self.found)


class _ByContent:
    """The items of a body that may be mutated: kept and compared by their
    :func:`~tokenlean._caches.content_key`, and read from the private copy that key gives. An
    item without one, and those after it, are read from the caller's objects, and a later list
    resumes only up to the last rest before it."""

    __slots__ = ("found", "items", "keyed", "keys")

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.keys = _content_keys(items)
        self.keyed = len(self.keys)
        self.found: tuple[_ListRead | None, int] = (None, 0)

    def kept(self, kind: object) -> tuple[_ListRead | None, int]:
        def shared(kept: _ListRead) -> int:
            return leading(map(operator.eq, kept.items, self.keys)) if kept.kind is kind else 0

        kept, same = _CONTENTS.find(tuple(self.keys[:2]), shared) if self.keys else (None, 0)
        if kept is None or kept.kind is not kind:
            return None, 0
        self.found = kept, same
        return kept, same

    def source(self, j: int) -> Any:
        return marshal.loads(self.keys[j]) if j < self.keyed else self.items[j]

    def held(self, j: int, measured: int | None) -> int:
        # the view holds the copy's texts and arguments (charged with the view); the list, the key
        return _KEY_BYTES + len(self.keys[j])

    def keep(self, kind: object, view: RawView, rests: _Rests, charge: int) -> None:
        read = _ListRead(kind, tuple(self.keys), view, rests)
        _CONTENTS.put(tuple(self.keys[:2]), read, charge, *self.found)


def _content_keys(items: list[Any]) -> list[bytes]:
    """The :func:`content_key` of ``items``, up to the first that has none."""
    return cast("list[bytes]", list(takewhile(_KEYED, map(content_key, items))))


def _resume(out: ViewBuilder, kind: object, items: _ByObject | _ByContent) -> _Rests:
    """The rests of the last list of ``kind`` that ``items`` begins with, up to the last one
    within what the two share, that part of its view added to ``out``."""
    kept, same = items.kept(kind)
    if kept is None:
        return _Rests()
    n = bisect_right(kept.rests.counts, same)
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
    names the reader: only a list read by the same kind is resumed). The items a recent list
    began with too are taken from its view at once, up to the last rest among them, and the
    reading resumes from there."""
    out = ViewBuilder()
    if not items:
        reading.end(out)
        return out.build()
    keeping = _ByObject(items) if FROZEN.get() else _ByContent(items)
    rests = _resume(out, kind, keeping)
    if rests.states:
        reading.resume(rests.states[-1])
    held = 0  # the bytes the items read since the last rest hold (the list keeps them alive)
    for j in range(rests.counts[-1] if rests.counts else 0, len(items)):
        measured = reading.item(out, j, keeping.source(j))
        if j < keeping.keyed:
            held += keeping.held(j, measured)
            if (state := reading.rest()) is not None:
                rests.add(j + 1, out.messages, state, held)
                held = 0
    reading.end(out)
    view = out.build()
    if keeping.keyed:  # resumed only up to its last rest among the items with a key
        end = rests.ends[-1] if rests.ends else 0
        charge = (rests.charges[-1] if rests.charges else 0) + held + _charge(view.messages[end:])
        keeping.keep(kind, view, rests, charge)
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
