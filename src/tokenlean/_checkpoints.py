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
import operator
import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

from tokenlean._caches import Openings, held_bytes
from tokenlean._identity import ByIdentity, branch, leading, same_objects
from tokenlean.transcript import Message

__all__ = [
    "MEMO_MAX_BYTES",
    "Checkpoint",
    "Memo",
    "chain_bytes",
    "checkpoint_bytes",
    "fingerprint",
    "prefix_digests",
]

#: The planner memo's bound in bytes (:class:`Memo`): a shortened 100 KB tool output charges
#: about 200 KB (its original and the lines it shows), so this holds about 650 of them where
#: 256 entries of full histories held 345 MB; a small share of a machine.
MEMO_MAX_BYTES = 128 * 2**20

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
    """A bounded, thread-safe LRU of checkpoints keyed by (policy, history digest).

    Bounded in entries and in bytes: an entry is charged the estimated size of its whole chain
    (:func:`chain_bytes`: a checkpoint keeps its parents alive, and the originals its edits
    hold are whole tool outputs), so the memo never holds more than ``max_bytes`` of them
    however large the histories; a chain larger than that alone is not kept (that history is
    planned from scratch each time). Evicting only costs time: a cold plan equals a warm one.
    """

    def __init__(self, entries: int, max_bytes: int = MEMO_MAX_BYTES) -> None:
        self.entries = entries
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple[P, bytes], Checkpoint[E, C]] = OrderedDict()
        self._charges: dict[int, int] = {}  # id of a kept checkpoint -> its chain's bytes
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """The estimated bytes of the chains kept (shared parents counted in each)."""
        return self._bytes

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
            self._drop((policy, digest))
            charge = self._charge(node)
            if charge > self.max_bytes:
                return
            self._items[(policy, digest)] = node
            self._charges[id(node)] = charge
            self._bytes += charge
            while len(self._items) > self.entries or self._bytes > self.max_bytes:
                self._drop(next(iter(self._items)))

    def _charge(self, node: Checkpoint[E, C]) -> int:
        """``node``'s chain's bytes: its own, plus its nearest kept ancestor's charge."""
        own = 0
        walk: Checkpoint[E, C] | None = node
        while walk is not None and id(walk) not in self._charges:
            own += checkpoint_bytes(walk)
            walk = walk.parent
        return own + (0 if walk is None else self._charges[id(walk)])

    def _drop(self, key: tuple[P, bytes]) -> None:
        node = self._items.pop(key, None)
        if node is not None:
            self._bytes -= self._charges.pop(id(node))

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._charges.clear()
            self._bytes = 0


def checkpoint_bytes(node: Checkpoint[Any, Any]) -> int:
    """Bytes of what one checkpoint holds beyond its parent: the lines and results it shows,
    its edits with the originals they keep (see :func:`held_bytes`)."""
    lines = sys.getsizeof(node.lines) + sum(map(sys.getsizeof, node.lines))
    return sys.getsizeof(node) + lines + held_bytes(node.results) + held_bytes(node.edits)


def chain_bytes(node: Checkpoint[Any, Any]) -> int:
    """Bytes of a checkpoint's whole chain (what keeping it keeps alive)."""
    return sum(checkpoint_bytes(n) for n in node.chain())


def _hashable(policy: object) -> bool:
    try:
        hash(policy)
    except TypeError:  # e.g. a counter that cannot be a key: plan from scratch every time
        return False
    return True


@dataclass(frozen=True, slots=True)
class _Chain:
    """A history's digests, with the messages and answers they were taken from."""

    view: tuple[Message, ...]
    answered: tuple[frozenset[str], ...]
    digests: tuple[bytes, ...]
    held: tuple[int, ...]  # the bytes the first ``k + 1`` messages keep alive (``held[k]``)


#: The digests of recent histories, by their second message object (:func:`branch`; several
#: histories under one): a history re-sent with new messages after it (the proxy gives back the
#: same message objects) hashes only the new ones. Charged what it keeps alive (texts, and the
#: arguments of calls), so histories nobody re-sends cannot hold much.
_CHAINS: Openings[_Chain] = Openings(
    ByIdentity(max_entries=256, max_bytes=64 * 2**20), lambda chain: len(chain.view)
)


def prefix_digests(view: Sequence[Message], answered: Sequence[frozenset[str]]) -> list[bytes]:
    """``digests[i]`` identifies ``view[:i]`` as far as planning is concerned.

    ``answered[i]`` is what planning reads beyond message *i* (the calls of an assistant turn
    that the following results answer), so it is part of the digest. Each digest hashes the one
    before it with the next message's fingerprint, so a known prefix is not hashed again.
    """
    chain, same = (
        _CHAINS.find(branch(view), partial(_shared, view=view, answered=answered))
        if view
        else (None, 0)
    )
    digests = [b""] if chain is None else list(chain.digests[: same + 1])
    held = list(chain.held[:same]) if chain is not None else []
    for message, ids in zip(view[same:], answered[same:], strict=True):
        printed = fingerprint(message, ids)
        digests.append(hashlib.sha256(digests[-1] + printed).digest())
        # what the message keeps alive: its text, and three bytes a character of the rest of
        # its fingerprint (its calls' JSON: their arguments' objects, larger than their text)
        text = len(message.content) if isinstance(message.content, str) else 0
        held.append((held[-1] if held else 0) + 160 + len(printed) + 2 * (len(printed) - text))
    if view and same < len(view):
        kept = _Chain(tuple(view), tuple(answered), tuple(digests), tuple(held))
        _CHAINS.put(branch(view), kept, held[-1], chain, same)
    return digests


def _shared(chain: _Chain, view: Sequence[Message], answered: Sequence[frozenset[str]]) -> int:
    """How many leading messages ``view`` has in common with ``chain`` (the same objects,
    answered alike)."""
    same = same_objects(chain.view, view)
    return leading(map(operator.eq, chain.answered[:same], answered[:same]))


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
