"""Originals of shortened tool results, kept so the agent can read them back.

Every original lives under a *scope* (the conversation thread) and a *handle* (a short id that
shortened text names in its omission markers). :class:`InMemoryOriginalStore` is the default; a
:class:`LangGraphOriginalStore` puts them in a LangGraph ``BaseStore`` so several workers share
them. A lookup names its own scope, so one thread never reads another thread's originals.
:func:`excerpt` cuts the part an agent asks for: a line range or the lines containing a pattern.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

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


def make_handle(kind: str, *parts: str) -> str:
    """The one handle scheme: ``kind`` (one letter: ``o`` outputs, ``i`` inputs) and a digest.

    Deterministic, so every process and worker names the same original the same way.
    """
    digest = hashlib.sha256("\n".join(parts).encode("utf-8", "surrogatepass")).digest()
    number = int.from_bytes(digest[:8], "big") % 10**HANDLE_DIGITS
    return f"{kind}{number:0{HANDLE_DIGITS}d}"


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


class InMemoryOriginalStore:
    """Originals in this process, oldest dropped first once ``max_chars`` is exceeded."""

    def __init__(self, *, max_chars: int = 64_000_000) -> None:
        if max_chars < 1:
            raise ValueError(f"max_chars must be positive, got {max_chars}")
        self.max_chars = max_chars
        self._items: OrderedDict[tuple[str, str], Original] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def put(self, scope: str, original: Original) -> None:
        key = (scope, original.handle)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._chars -= len(old.text)
            self._items[key] = original
            self._chars += len(original.text)
            while self._chars > self.max_chars and len(self._items) > 1:
                _, dropped = self._items.popitem(last=False)
                self._chars -= len(dropped.text)

    def get(self, scope: str, handle: str) -> Original | None:
        with self._lock:
            return self._items.get((scope, handle))

    async def aput(self, scope: str, original: Original) -> None:
        self.put(scope, original)

    async def aget(self, scope: str, handle: str) -> Original | None:
        return self.get(scope, handle)

    def __len__(self) -> int:
        return len(self._items)


class LangGraphOriginalStore:
    """Originals in a LangGraph ``BaseStore`` under ``(*namespace, scope)``, keyed by handle."""

    def __init__(
        self, store: BaseStore, *, namespace: tuple[str, ...] = ("tokenlean", "originals")
    ) -> None:
        if not namespace or not all(isinstance(part, str) and part for part in namespace):
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
