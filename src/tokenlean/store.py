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

from typing import Any

from tokenlean._excerpt import MAX_EXCERPT_CHARS, excerpt, parse_lines
from tokenlean._folder_store import FolderOriginalStore, default_originals_dir
from tokenlean._memory_store import (
    MEMORY_EVICTED_REMEMBERED,
    MEMORY_MAX_BYTES,
    MEMORY_MAX_BYTES_PER_THREAD,
    InMemoryOriginalStore,
)
from tokenlean._retention import ORIGINALS_MAX_AGE, ORIGINALS_MAX_BYTES, Pruned
from tokenlean._store_protocol import (
    HANDLE_DIGITS,
    AsyncBatchingStore,
    BatchingStore,
    EvictingStore,
    Original,
    OriginalStore,
    StoreUnavailable,
    aput_all,
    looks_like_handle,
    make_handle,
    put_all,
    utf8_size,
)

__all__ = [
    "HANDLE_DIGITS",
    "MAX_EXCERPT_CHARS",
    "MEMORY_EVICTED_REMEMBERED",
    "MEMORY_MAX_BYTES",
    "MEMORY_MAX_BYTES_PER_THREAD",
    "ORIGINALS_MAX_AGE",
    "ORIGINALS_MAX_BYTES",
    "RETRIEVAL_TOOL",
    "STORE_NAMESPACE",
    "AsyncBatchingStore",
    "BatchingStore",
    "EvictingStore",
    "FolderOriginalStore",
    "InMemoryOriginalStore",
    "Original",
    "OriginalStore",
    "Pruned",
    "StoreUnavailable",
    "aput_all",
    "default_originals_dir",
    "excerpt",
    "looks_like_handle",
    "make_handle",
    "parse_lines",
    "put_all",
    "retrieval_description",
    "retrieval_schema",
    "utf8_size",
]

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


#: Where originals go in a LangGraph store (the agent's own, unless another namespace is given).
STORE_NAMESPACE: tuple[str, ...] = ("tokenlean", "originals")
