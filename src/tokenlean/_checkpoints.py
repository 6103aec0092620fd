"""The memo behind :class:`tokenlean.pipeline.Planner`: checkpoints of planned histories.

A checkpoint records what planning one request's new messages added (edits, lines shown, whole
results shown) and links to the checkpoint it resumed from, so a chain of them is one
conversation and each request stores only its own part. Checkpoints are keyed by the policy and
a rolling digest of the history as planning reads it, so a request resumes from the longest
history it shares with any earlier one, whatever moved in between (a cache breakpoint, an
unknown field).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from tokenlean.transcript import Message

P = TypeVar("P", bound=Hashable)
E = TypeVar("E")
C = TypeVar("C")


@dataclass(frozen=True, slots=True)
class Checkpoint(Generic[E, C]):
    """What planning messages ``parent.end .. end-1`` added."""

    parent: Checkpoint[E, C] | None
    end: int
    edits: tuple[E, ...]
    lines: frozenset[str]
    results: Mapping[str, C]  # digest of a whole result shown -> what names it
    tokens_before: int
    tokens_after: int

    def chain(self) -> list[Checkpoint[E, C]]:
        """Every checkpoint of this history, oldest first."""
        nodes: list[Checkpoint[E, C]] = []
        node: Checkpoint[E, C] | None = self
        while node is not None:
            nodes.append(node)
            node = node.parent
        return nodes[::-1]


class Memo(Generic[P, E, C]):
    """A bounded, thread-safe LRU of checkpoints keyed by (policy, history digest)."""

    def __init__(self, entries: int) -> None:
        self.entries = entries
        self._items: OrderedDict[tuple[P, bytes], Checkpoint[E, C]] = OrderedDict()
        self._lock = threading.Lock()

    def resume(self, policy: P, digests: Sequence[bytes]) -> tuple[int, Checkpoint[E, C] | None]:
        """The longest memoised prefix: where to start planning, and its checkpoint."""
        if not _hashable(policy):
            return 0, None
        with self._lock:
            for end in range(len(digests) - 1, 0, -1):
                node = self._items.get((policy, digests[end]))
                if node is not None:
                    self._items.move_to_end((policy, digests[end]))
                    return end, node
        return 0, None

    def put(self, policy: P, digest: bytes, node: Checkpoint[E, C]) -> None:
        if not _hashable(policy):
            return
        with self._lock:
            self._items[(policy, digest)] = node
            self._items.move_to_end((policy, digest))
            while len(self._items) > self.entries:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def _hashable(policy: object) -> bool:
    try:
        hash(policy)
    except TypeError:  # e.g. a counter that cannot be a key: plan from scratch every time
        return False
    return True


def prefix_digests(view: Sequence[Message], answered: Sequence[frozenset[str]]) -> list[bytes]:
    """``digests[i]`` identifies ``view[:i]`` as far as planning is concerned.

    ``answered[i]`` is what planning reads beyond message *i* (the calls of an assistant turn
    that the following results answer), so it is part of the digest.
    """
    digests = [b""]
    running = hashlib.sha256()
    for message, ids in zip(view, answered, strict=True):
        running.update(fingerprint(message, ids))
        digests.append(running.copy().digest())
    return digests


def fingerprint(message: Message, answered: frozenset[str]) -> bytes:
    """Everything about a message that planning reads (cheaper than its canonical JSON).

    Lengths go first, so no choice of text can make two different messages run together.
    """
    calls = ""
    if message.tool_calls:
        listed = [[c.id, c.name, c.args] for c in message.tool_calls]
        calls = json.dumps(listed, ensure_ascii=False, sort_keys=True, default=str)
    fields = [
        message.role,
        message.tool_call_id or "",
        "1" if message.is_text_only else "0",
        calls,
        "\0".join(sorted(answered)),
        message.text,
    ]
    head = ",".join(str(len(f)) for f in fields)
    return (head + "\n" + "".join(fields)).encode("utf-8", "surrogatepass")
