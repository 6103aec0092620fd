"""Originals of shortened tool results, kept so the agent can read them back.

Every original lives under a *scope* (the conversation thread) and a *handle* (a short id that
shortened text names in its omission markers). A :class:`LangGraphOriginalStore` puts them in a
LangGraph ``BaseStore`` (the agent's own, ``create_agent(..., store=...)``, unless another is
given), so they last as long as that store does and every worker sees them; without one,
:class:`InMemoryOriginalStore` keeps them in this process, bounded in bytes per thread and in
total. :class:`StoreChoice` is that rule in one place. A lookup names its own scope, so one
thread never reads another thread's originals. :func:`excerpt` cuts the part an agent asks for:
a line range or the lines containing a pattern.
"""

from __future__ import annotations

import hashlib
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from tokenlean import checks

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

#: The tool through which an agent reads originals back (every marker and placeholder names it).
RETRIEVAL_TOOL = "read_original"
#: Excerpts longer than this are cut, with a note to ask for less.
MAX_EXCERPT_CHARS = 24_000
#: Decimal digits of a handle: 40 bits, so a thread of 20,000 originals has about a 0.02% chance
#: of two sharing one (six hex digits, 24 bits, would be sure to). Decimal because tokenizers
#: read digits three at a time: twelve cost four tokens where twelve hex digits cost about seven.
HANDLE_DIGITS = 12
_HANDLE = re.compile(rf"[a-z]\d{{{HANDLE_DIGITS}}}")

#: Where originals go in a LangGraph store (the agent's own, unless another namespace is given).
STORE_NAMESPACE: tuple[str, ...] = ("tokenlean", "originals")
#: The in-memory store's bounds, in UTF-8 bytes of original text: per conversation thread (so
#: one busy thread never pushes out another's originals) and over all threads (the memory cap).
MEMORY_MAX_BYTES_PER_THREAD = 16 * 2**20
MEMORY_MAX_BYTES = 128 * 2**20
#: How many evicted handles the in-memory store remembers, to answer "evicted" rather than
#: "no such handle" (about 100 bytes each).
MEMORY_EVICTED_REMEMBERED = 100_000


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
        return {
            "handle": self.handle,
            "text": self.text,
            "tool": self.tool,
            "tool_call_id": self.tool_call_id,
        }

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


@runtime_checkable
class EvictingStore(Protocol):
    """A store that drops originals to bound its size and can say which ones it dropped."""

    def evicted(self, scope: str, handle: str) -> bool: ...


def utf8_size(text: str) -> int:
    """The UTF-8 size of ``text`` in bytes (without copying it when it is ASCII)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


@dataclass(slots=True)
class _Thread:
    """One scope's originals, oldest first, with their sizes."""

    items: OrderedDict[str, tuple[Original, int]]
    size: int = 0


class InMemoryOriginalStore:
    """Originals in this process's memory, bounded in UTF-8 bytes of original text.

    A thread's oldest originals are dropped once the thread holds more than
    ``max_bytes_per_thread``, and an original larger than that is not kept at all; past
    ``max_bytes`` over all threads, the oldest originals of the least recently used thread go
    first. So one busy thread can never push out another's originals (it holds at most its own
    cap), and memory stays bounded. Dropped handles are remembered (up to
    :data:`MEMORY_EVICTED_REMEMBERED`) so that :meth:`evicted` can tell them from wrong ones.
    Nothing here survives the process: give the agent a LangGraph store for that.
    """

    def __init__(
        self,
        *,
        max_bytes_per_thread: int = MEMORY_MAX_BYTES_PER_THREAD,
        max_bytes: int = MEMORY_MAX_BYTES,
    ) -> None:
        checks.integer(max_bytes_per_thread, "max_bytes_per_thread", at_least=1)
        checks.integer(max_bytes, "max_bytes", at_least=1)
        if max_bytes_per_thread > max_bytes:
            raise ValueError(
                f"max_bytes_per_thread ({max_bytes_per_thread}) must not exceed max_bytes "
                f"({max_bytes})"
            )
        self.max_bytes_per_thread = max_bytes_per_thread
        self.max_bytes = max_bytes
        self._threads: OrderedDict[str, _Thread] = OrderedDict()  # least recently used first
        self._size = 0
        self._count = 0
        self._evicted: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, scope: str, original: Original) -> None:
        size = utf8_size(original.text)
        with self._lock:
            key = (scope, original.handle)
            self._evicted.pop(key, None)
            thread = self._threads.get(scope)
            if thread is None:
                thread = self._threads[scope] = _Thread(OrderedDict())
            self._threads.move_to_end(scope)
            old = thread.items.pop(original.handle, None)
            if old is not None:
                self._drop_size(thread, old[1])
            if size > self.max_bytes_per_thread:  # would push out all the thread has: not kept
                self._remember_evicted(key)
                if not thread.items:
                    del self._threads[scope]
                return
            thread.items[original.handle] = (original, size)
            thread.size += size
            self._size += size
            self._count += 1
            while thread.size > self.max_bytes_per_thread:
                self._evict_oldest(scope, thread)
            # Past the total, the least recently used threads give way (never this one: it holds
            # at most max_bytes_per_thread <= max_bytes on its own).
            while self._size > self.max_bytes:
                self._evict_oldest(*next(iter(self._threads.items())))

    def get(self, scope: str, handle: str) -> Original | None:
        with self._lock:
            thread = self._threads.get(scope)
            entry = thread.items.get(handle) if thread is not None else None
            if entry is None:
                return None
            self._threads.move_to_end(scope)
            return entry[0]

    def evicted(self, scope: str, handle: str) -> bool:
        """Whether ``handle`` was kept in ``scope`` and dropped since to bound the store."""
        with self._lock:
            return (scope, handle) in self._evicted

    async def aput(self, scope: str, original: Original) -> None:
        self.put(scope, original)

    async def aget(self, scope: str, handle: str) -> Original | None:
        return self.get(scope, handle)

    @property
    def size_bytes(self) -> int:
        """UTF-8 bytes of original text held now, over all threads."""
        return self._size

    def thread_bytes(self, scope: str) -> int:
        """UTF-8 bytes of original text held now for ``scope``."""
        with self._lock:
            thread = self._threads.get(scope)
            return thread.size if thread is not None else 0

    def __len__(self) -> int:
        return self._count

    # -- internals (called with the lock held) -------------------------------------------

    def _drop_size(self, thread: _Thread, size: int) -> None:
        thread.size -= size
        self._size -= size
        self._count -= 1

    def _evict_oldest(self, scope: str, thread: _Thread) -> None:
        handle, (_, size) = thread.items.popitem(last=False)
        self._drop_size(thread, size)
        if not thread.items:
            del self._threads[scope]
        self._remember_evicted((scope, handle))

    def _remember_evicted(self, key: tuple[str, str]) -> None:
        self._evicted[key] = None
        if len(self._evicted) > MEMORY_EVICTED_REMEMBERED:
            self._evicted.popitem(last=False)


class LangGraphOriginalStore:
    """Originals in a LangGraph ``BaseStore`` under ``(*namespace, scope)``, keyed by handle.

    They last as long as the store does (a ``SqliteStore`` or ``PostgresStore`` survives
    restarts) and every worker on the same store sees them.
    """

    def __init__(self, store: BaseStore, *, namespace: tuple[str, ...] = STORE_NAMESPACE) -> None:
        methods = ("put", "get", "aput", "aget")
        missing = [m for m in methods if not callable(getattr(store, m, None))]
        if missing:
            raise checks.ArgumentTypeError(
                "store must be a LangGraph BaseStore (put, get, aput, aget by namespace and "
                f"key), got {type(store).__name__} without {', '.join(missing)}"
            )
        if (
            not isinstance(namespace, (tuple, list))
            or not namespace
            or not all(isinstance(part, str) and part for part in namespace)
        ):
            raise ValueError(f"namespace must be non-empty strings, got {namespace!r}")
        self.store = store
        self.namespace = tuple(namespace)

    def _ns(self, scope: str) -> tuple[str, ...]:
        # Store labels may not contain "." (nor be empty): escape injectively.
        label = scope.replace("%", "%25").replace(".", "%2E")
        return (*self.namespace, label or "%")

    def put(self, scope: str, original: Original) -> None:
        self.store.put(self._ns(scope), original.handle, original.to_dict(), index=False)

    def get(self, scope: str, handle: str) -> Original | None:
        item = self.store.get(self._ns(scope), handle)
        return Original.from_dict(item.value) if item is not None else None

    async def aput(self, scope: str, original: Original) -> None:
        await self.store.aput(self._ns(scope), original.handle, original.to_dict(), index=False)

    async def aget(self, scope: str, handle: str) -> Original | None:
        item = await self.store.aget(self._ns(scope), handle)
        return Original.from_dict(item.value) if item is not None else None


def _is_langgraph_store(value: object) -> bool:
    # Only a loaded LangGraph can have made a BaseStore: the core never imports it itself.
    base = sys.modules.get("langgraph.store.base")
    return base is not None and isinstance(value, base.BaseStore)


def as_original_store(value: object, *, name: str = "store") -> OriginalStore:
    """``value`` as an :class:`OriginalStore`: a LangGraph ``BaseStore`` is wrapped in a
    :class:`LangGraphOriginalStore`; anything else must have ``put``/``get``/``aput``/``aget``
    by scope and original (else ``TypeError`` naming ``name``)."""
    if _is_langgraph_store(value):
        return LangGraphOriginalStore(value)  # type: ignore[arg-type]  # checked just above
    if not isinstance(value, OriginalStore) or isinstance(value, (str, bytes, Mapping)):
        raise checks.ArgumentTypeError(
            f"{name} must be an OriginalStore (put/get/aput/aget by scope and Original, e.g. "
            f"InMemoryOriginalStore) or a LangGraph BaseStore, got {type(value).__name__}"
        )
    return value


class StoreChoice:
    """Where a middleware keeps originals, and where ``read_original`` looks for them.

    The store the user gave, when one was given; else the agent's own LangGraph store
    (``create_agent(..., store=...)``, read from the runtime on every call) under
    :data:`STORE_NAMESPACE`, so originals survive whatever the agent's store survives; else
    :attr:`memory`, this process's :class:`InMemoryOriginalStore`. Middleware that share one
    choice (as :func:`~tokenlean.langchain.recommended_middleware` does) share their originals.
    """

    def __init__(self, given: object = None) -> None:
        self.given: OriginalStore | None = (
            None if given is None else as_original_store(given, name="store")
        )
        self.memory = InMemoryOriginalStore()
        self._wrapped: tuple[object, LangGraphOriginalStore] | None = None

    @classmethod
    def of(cls, store: object) -> StoreChoice:
        """``store`` itself when it is a choice already, else a choice around it."""
        return store if isinstance(store, StoreChoice) else cls(store)

    @property
    def default(self) -> OriginalStore:
        """The store used when the agent has none: the one given, else :attr:`memory`."""
        return self.given if self.given is not None else self.memory

    def pick(self, agent_store: object | None) -> OriginalStore:
        """The store for a call of an agent whose own store is ``agent_store`` (or ``None``)."""
        if self.given is not None or agent_store is None:
            return self.default
        wrapped = self._wrapped
        if wrapped is None or wrapped[0] is not agent_store:
            wrapped = (agent_store, LangGraphOriginalStore(agent_store))  # type: ignore[arg-type]
            self._wrapped = wrapped
        return wrapped[1]


def parse_lines(spec: str, total: int) -> tuple[int, int]:
    """``"120-160"``, ``"120"``, ``"120-"`` or ``"-40"`` as a 1-based inclusive range."""
    text = spec.strip().replace(" ", "")
    head, sep, tail = text.partition("-")
    try:
        first = int(head) if head else 1
        last = (int(tail) if tail else total) if sep else first
    except ValueError:
        raise ValueError(f"lines must look like '120-160' or '120', got {spec!r}") from None
    if first < 1 or last < first:
        raise ValueError(
            f"lines must be a range like '120-160' with 1 <= start <= end, got {spec!r}"
        )
    return first, min(last, total)


def excerpt(
    text: str,
    *,
    lines: str | None = None,
    pattern: str | None = None,
    context: int = 0,
    max_chars: int = MAX_EXCERPT_CHARS,
) -> str:
    """The part of ``text`` asked for: a line range, the lines containing ``pattern``
    (case-insensitive, plain text, with ``context`` lines around), or all of it; numbered."""
    checks.text(text, "text")
    if lines is not None:
        checks.text(lines, "lines")
    if pattern is not None:
        checks.text(pattern, "pattern")
    checks.integer(context, "context", at_least=0)
    checks.integer(max_chars, "max_chars", at_least=1)
    items = text.split("\n")
    first, last = parse_lines(lines, len(items)) if lines else (1, len(items))
    if first > len(items):
        return f"[no such lines: the original has {len(items)} lines]"
    wanted = range(first - 1, last)
    if pattern:
        needle = pattern.lower()
        hits = [i for i in wanted if needle in items[i].lower()]
        if not hits:
            return f"[no line contains {pattern!r}]"
        keep = sorted(
            {
                j
                for i in hits
                for j in range(max(first - 1, i - context), min(last, i + context + 1))
            }
        )
    else:
        keep = list(wanted)
    return _numbered(items, keep, max_chars)


def _numbered(items: list[str], keep: list[int], max_chars: int) -> str:
    out: list[str] = []
    size, previous = 0, None
    for i in keep:
        if previous is not None and i != previous + 1:
            out.append("--")
        line = f"{i + 1}: {items[i]}"
        if size + len(line) > max_chars:
            out.append(f"[... cut at line {i + 1}: ask for a narrower range or a pattern ...]")
            break
        out.append(line)
        size += len(line) + 1
        previous = i
    return "\n".join(out)
