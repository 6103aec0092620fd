"""Reading a body's message list into the view, once per message object when the bodies are
never mutated (:func:`frozen_bodies`: the proxy's parsed bodies, shared by the requests that
re-send them): each message's reading is kept by the message itself, and each list's by its
first message, so a re-sent history reads only the messages that are new or changed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

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

__all__ = ["frozen_bodies", "messages_reader"]

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


def _read_once(out: ViewBuilder, reader: MessageReader, i: int, message: Mapping[str, Any]) -> None:
    read = _READS.get(message)
    if read is None or read.index != i or read.reader is not reader:
        own = ViewBuilder()
        reader(own, i, message)
        read = MessageRead(reader, i, tuple(own.messages), own.results, own.calls)
        held = sum(len(m.content) if isinstance(m.content, str) else 64 for m in read.messages)
        _READS.put(message, read, 256 * (1 + len(read.messages)) + held)
    out.extend(read)


@dataclass(frozen=True, slots=True)
class _ListRead:
    """What ``reader`` made of a whole message list: its items (the objects), its view, and how
    many of the view's messages the list's first ``k + 1`` items made (``ends[k]``)."""

    reader: MessageReader
    items: tuple[Any, ...]
    view: RawView
    ends: list[int]
    charges: list[int]  # the bytes the first ``k + 1`` items and their reading hold


#: Each frozen list's reading, by its first message object: a history re-sent with new messages
#: after it (and maybe its newest message changed: a cache breakpoint moved), its messages the
#: very objects of the last time, takes the view of those it shares in one step and reads only
#: the others (about 1 us a message otherwise, a millisecond on a long history).
_LISTS: ByIdentity[_ListRead] = ByIdentity(max_entries=4096, max_bytes=128 * 2**20)
#: Bytes charged a kept list per message beyond its text (its item's place, its end and charge,
#: the view's message and slots), and per character of its text (the item, the message's own
#: objects, and the view's copy: the other memos may drop theirs first).
_LIST_BYTES_PER_MESSAGE = 256
_LIST_BYTES_PER_CHAR = 3


def _resume(
    out: ViewBuilder, reader: MessageReader, messages: list[Any]
) -> tuple[list[int], list[int]]:
    """The ends and charges of the first of ``messages`` that the last list they begin with
    held too (the same objects, in the same places), their part of that list's view added to
    ``out``."""
    kept = _LISTS.get(messages[0])
    if kept is None or kept.reader is not reader:
        return [], []
    same = same_objects(kept.items, messages)
    if not same:
        return [], []
    view, cut = kept.view, kept.ends[same - 1]
    if cut == len(view.messages):
        out.messages += view.messages
        out.results.update(view.results)
        out.calls.update(view.calls)
    else:
        out.messages += view.messages[:cut]
        out.results.update({i: slot for i, slot in view.results.items() if i < cut})
        out.calls.update({key: slot for key, slot in view.calls.items() if key[0] < cut})
    return kept.ends[:same], kept.charges[:same]


def _charge(messages: Sequence[Message]) -> int:
    """What a kept list is charged for the view's ``messages`` of one of its items."""
    chars = sum(len(m.content) if isinstance(m.content, str) else 64 for m in messages)
    return _LIST_BYTES_PER_MESSAGE + _LIST_BYTES_PER_CHAR * chars


def messages_reader(read_message: MessageReader) -> BodyReader:
    """The reader of bodies that hold a list of ``messages`` (Anthropic, OpenAI Chat
    Completions): each message that is a mapping ``read_message`` adds to the view with its
    index, anything else in the list is skipped; ``None`` for a body with no message list."""

    def read(body: Mapping[str, Any]) -> RawView | None:
        messages = body.get("messages")
        if not isinstance(messages, list):
            return None
        out = ViewBuilder()
        frozen = FROZEN.get() and bool(messages)
        ends, charges = _resume(out, read_message, messages) if frozen else ([], [])
        for i in range(len(ends), len(messages)):
            message, start = messages[i], len(out.messages)
            if frozen and isinstance(message, Mapping):
                _read_once(out, read_message, i, message)
            elif isinstance(message, Mapping):
                read_message(out, i, message)
            ends.append(len(out.messages))
            if frozen:
                charges.append((charges[-1] if charges else 0) + _charge(out.messages[start:]))
        view = out.build()
        if frozen:
            kept = _ListRead(read_message, tuple(messages), view, ends, charges)
            _LISTS.put(messages[0], kept, charges[-1])
        return view

    return read
