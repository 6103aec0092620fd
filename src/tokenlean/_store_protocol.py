"""What every store of originals shares: the :class:`Original`, the one handle scheme, the
:class:`OriginalStore` protocol (and what a store may do beyond it: evict, take a batch), and
the puts of a turn's originals in one batch where a store takes one. The public names are
:mod:`tokenlean.store`'s."""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "HANDLE_DIGITS",
    "HANDLE_PATTERN",
    "AsyncBatchingStore",
    "BatchingStore",
    "EvictingStore",
    "Original",
    "OriginalStore",
    "StoreUnavailable",
    "aput_all",
    "looks_like_handle",
    "make_handle",
    "put_all",
    "utf8_size",
]

#: Decimal digits of a handle: 40 bits, so a thread of 20,000 originals has about a 0.02% chance
#: of two sharing one (six hex digits, 24 bits, would be sure to). Decimal because tokenizers
#: read digits three at a time: twelve cost four tokens where twelve hex digits cost about seven.
HANDLE_DIGITS = 12
#: A handle, as a regular expression (what :func:`make_handle` gives).
HANDLE_PATTERN = rf"[a-z]\d{{{HANDLE_DIGITS}}}"
_HANDLE = re.compile(HANDLE_PATTERN)


def make_handle(kind: str, *parts: str) -> str:
    """The one handle scheme: ``kind`` (one letter: ``o`` outputs, ``i`` inputs) and a digest.

    Deterministic, so every process and worker names the same original the same way.
    """
    digest = hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).digest()
    number = int.from_bytes(digest[:8], "big") % 10**HANDLE_DIGITS
    return f"{kind}{number:0{HANDLE_DIGITS}d}"


def looks_like_handle(text: str) -> bool:
    """Whether ``text`` has the shape :func:`make_handle` gives (a letter and twelve digits)."""
    return _HANDLE.fullmatch(text) is not None


@dataclass(frozen=True, slots=True)
class Original:
    """One tool result as it was before shortening."""

    handle: str
    text: str
    tool: str | None = None
    tool_call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Original:
        return cls(
            str(data["handle"]), str(data["text"]), data.get("tool"), data.get("tool_call_id")
        )


@runtime_checkable
class OriginalStore(Protocol):
    """Where originals are kept; every call names the scope (thread) it acts for."""

    def put(self, scope: str, original: Original) -> None: ...

    def get(self, scope: str, handle: str) -> Original | None: ...

    async def aput(self, scope: str, original: Original) -> None: ...

    async def aget(self, scope: str, handle: str) -> Original | None: ...


class StoreUnavailable(OSError):
    """A store could not keep an original now (its server cannot be reached). ``put`` raises it
    rather than return as if kept, so no marker names an original that is not there: the way
    in then sends the history as it came (:func:`tokenlean.history.keep`)."""


@runtime_checkable
class EvictingStore(Protocol):
    """A store that drops originals to bound its size and can say which ones it dropped."""

    def evicted(self, scope: str, handle: str) -> bool: ...


@runtime_checkable
class BatchingStore(Protocol):
    """A store that keeps many originals in one exchange with its server: the proxy puts every
    original of a history on each request, and a round trip each made a long history's request
    wait for hundreds."""

    def put_many(self, scope: str, originals: Sequence[Original]) -> None: ...


@runtime_checkable
class AsyncBatchingStore(Protocol):
    """A :class:`BatchingStore` whose batch can also be awaited (a LangGraph store's
    ``abatch``): from an event loop it is taken that way, not on a worker thread."""

    async def aput_many(self, scope: str, originals: Sequence[Original]) -> None: ...


def put_all(store: OriginalStore, scope: str, originals: Sequence[Original]) -> None:
    """``store.put`` of each of ``originals``, in one batch where the store takes one."""
    if isinstance(store, BatchingStore):
        store.put_many(scope, originals)
        return
    for original in originals:
        store.put(scope, original)


async def aput_all(store: OriginalStore, scope: str, originals: Sequence[Original]) -> None:
    """``store.aput`` of each of ``originals``; a store that takes a batch gets them in one:
    awaited when it can be, else on a worker thread (its ``put_many`` blocks)."""
    if isinstance(store, AsyncBatchingStore) and len(originals) > 1:
        await store.aput_many(scope, originals)
        return
    if isinstance(store, BatchingStore) and len(originals) > 1:
        await asyncio.to_thread(store.put_many, scope, originals)
        return
    for original in originals:
        await store.aput(scope, original)


def utf8_size(text: str) -> int:
    """The UTF-8 size of ``text`` in bytes (without copying it when it is ASCII)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
