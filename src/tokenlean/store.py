"""Originals of shortened tool results, kept so the agent can read them back.

Every original lives under a *scope* (the conversation thread) and a *handle* (a short id that
shortened text names in its omission markers). :class:`OriginalStore` is the one protocol every
store follows: :class:`InMemoryOriginalStore` keeps them in this process, bounded in bytes per
thread and in total; :class:`FolderOriginalStore` keeps them as files an agent can open, bounded
in size and in age (:mod:`tokenlean._retention`); :class:`~tokenlean.redis_store.
RedisOriginalStore` keeps them on a Redis (or Valkey) server that several machines share; the
LangChain adapter adds a store over a LangGraph ``BaseStore``
(:class:`tokenlean.langchain.store.LangGraphOriginalStore`). A lookup
names its own scope, so one thread never reads another thread's originals. :func:`excerpt` cuts
the part an agent asks for: a line range or the lines containing a pattern.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import stat
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from tokenlean import checks
from tokenlean._retention import ORIGINALS_MAX_AGE as ORIGINALS_MAX_AGE
from tokenlean._retention import ORIGINALS_MAX_BYTES as ORIGINALS_MAX_BYTES
from tokenlean._retention import Pruned as Pruned
from tokenlean._retention import (
    Retention,
    check_limits,
    freshen,
    secure_folder,
    was_pruned,
)

#: The tool through which an agent reads originals back (every marker and placeholder names it).
RETRIEVAL_TOOL = "read_original"


def retrieval_description(*, call_ids: bool = True) -> str:
    """The retrieval tool's description, the same on every way in (its schema is part of the
    prompt, so two adapters describing it differently would bill differently). ``call_ids``:
    the tool also reads a result the context editor cleared, by the call id its placeholder
    names."""
    handle = "the handle (or tool call id)" if call_ids else "the handle"
    return (
        f"Show what a tokenlean marker cut: pass {handle} it names, and `lines` "
        "('120-159') or a `pattern`, or neither for all."
    )


def retrieval_schema(*, call_ids: bool = True, name: str = RETRIEVAL_TOOL) -> dict[str, Any]:
    """The retrieval tool's schema as tokenlean counts every tool list (OpenAI-style, as
    LangChain binds it): what listing the tool costs in a prompt, whichever way in lists it."""
    text: dict[str, Any] = {"type": "string"}
    optional = {"default": "", "type": "string"}
    function = {
        "name": name,
        "description": retrieval_description(call_ids=call_ids),
        "parameters": {
            "type": "object",
            "properties": {"handle": text, "lines": optional, "pattern": optional},
            "required": ["handle"],
        },
    }
    return {"type": "function", "function": function}


#: Excerpts longer than this are cut, with a note to ask for less.
MAX_EXCERPT_CHARS = 24_000
#: Decimal digits of a handle: 40 bits, so a thread of 20,000 originals has about a 0.02% chance
#: of two sharing one (six hex digits, 24 bits, would be sure to). Decimal because tokenizers
#: read digits three at a time: twelve cost four tokens where twelve hex digits cost about seven.
HANDLE_DIGITS = 12
_HANDLE = re.compile(rf"[a-z]\d{{{HANDLE_DIGITS}}}")

#: Opening a file refuses a link (where the platform can: not Windows, which checks apart),
#: and never waits for a writer (a fifo planted in the folder).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_OPEN_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
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


class FolderOriginalStore:
    """Originals as files in ``directory``, ``<handle>.txt`` each, private to the user.

    For agents that read files (behind the proxy or an SDK wrapper): the handle is the file's
    name, so a marker names a path the agent's own file tools open. The scope is not part of the
    name: a handle made from the text alone (:class:`~tokenlean.readback.FileReadBack`) lets any
    number of processes and conversations share one folder and write (and name) the same file.

    The folder is bounded: originals unused for ``max_age`` seconds (default
    :data:`ORIGINALS_MAX_AGE`, 7 days) are deleted, then the least recently used until it holds
    at most ``max_bytes`` (default :data:`ORIGINALS_MAX_BYTES`, 1 GiB), by sweeps amortised over
    the writes, each on a thread of its own so that no put waits for one (:meth:`wait_for_sweep`
    waits); putting or reading an original marks it used. :meth:`prune` sweeps now. An
    existing folder is made ``0700`` (and its files ``0600`` as they are swept or used); one
    another user owns is refused with ``ValueError``.
    """

    def __init__(
        self,
        directory: Path,
        *,
        max_bytes: int = ORIGINALS_MAX_BYTES,
        max_age: float = ORIGINALS_MAX_AGE,
    ) -> None:
        checks.instance(directory, "directory", (str, Path), "a path")
        self.directory = Path(directory)
        self._folder = os.fspath(self.directory)
        self.max_bytes, self.max_age = check_limits(max_bytes, max_age)
        secure_folder(self.directory)
        self._retention = Retention(
            self.directory, max_bytes=self.max_bytes, max_age=self.max_age, is_original=_is_file
        )

    def path(self, handle: str) -> Path:
        return self.directory / f"{handle}.txt"

    def put(self, scope: str, original: Original) -> None:
        """Write the text unless it is already there (then mark it used); atomic, private.

        Tool output may hold secrets, so the directory is created ``0700`` and files ``0600``.
        The text is written to a temporary file beside the target and renamed over it, so a
        reader never sees half a file and concurrent writers of the same (identical) content
        cannot clash.
        """
        # self.path's, as a str: a request puts every original its history names again
        name = f"{self._folder}{os.sep}{original.handle}.txt"
        if freshen(name):
            self._retention.after_put(0)
            return
        path = Path(name)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".txt")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="replace", newline="") as out:
                out.write(original.text)
            Path(tmp).replace(path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._retention.after_put(utf8_size(original.text))

    def get(self, scope: str, handle: str) -> Original | None:
        if not looks_like_handle(handle):
            return None
        path = self.path(handle)
        text = _read_file(path)
        if text is None:
            return None
        freshen(path)  # read: used
        return Original(handle, text)

    def evicted(self, scope: str, handle: str) -> bool:
        """Whether ``handle``'s file was deleted by a sweep (of any process) and not since
        written again."""
        return (
            looks_like_handle(handle)
            and not self.path(handle).exists()
            and was_pruned(self.directory, handle)
        )

    def prune(self, *, dry_run: bool = False) -> Pruned:
        """Sweep now (``dry_run``: only count what would go); what was deleted and kept."""
        return self._retention.sweep(dry_run=dry_run)

    def wait_for_sweep(self, timeout: float | None = None) -> bool:
        """Wait until the sweep a put started, if any, has finished (puts sweep on a thread of
        their own, now and then); False if ``timeout`` seconds passed first."""
        return self._retention.wait(timeout)

    async def aput(self, scope: str, original: Original) -> None:
        self.put(scope, original)

    async def aget(self, scope: str, handle: str) -> Original | None:
        return self.get(scope, handle)


def _read_file(path: Path) -> str | None:
    """The text of the regular file at ``path``; None when there is none, or when ``path`` is a
    link or anything but a file: an agent must not read through the folder what lies outside
    it (a link planted under an original's name)."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:  # absent, a link (ELOOP), a folder...
        return None
    with os.fdopen(fd, encoding="utf-8", errors="replace") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or (not _NOFOLLOW and path.is_symlink()):
            return None
        return file.read()


#: Whether a name is an original's file (the only files a sweep deletes): a handle and ".txt",
#: asked at C speed of every name a sweep lists.
_is_file = re.compile(rf"{_HANDLE.pattern}\.txt").fullmatch


def default_originals_dir() -> Path:
    """``$XDG_CACHE_HOME/tokenlean/originals``, else ``~/.cache/tokenlean/originals``."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if Path(base).is_absolute() else Path.home() / ".cache"
    return (root / "tokenlean" / "originals").absolute()


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
