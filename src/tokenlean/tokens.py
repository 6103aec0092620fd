"""Counting tokens: a protocol, a dependency-free estimate (:class:`EstimateCounter`, the one
default of every threshold), exact counts on tiktoken (:class:`TiktokenCounter`), and the tokens
of a whole request.

The exact counter never downloads: it loads a vocabulary file from a path you give, from
``$TOKENLEAN_TIKTOKEN_DIR``, or from tiktoken's own cache, and otherwise raises
:class:`VocabularyNotFoundError` at once, so an offline machine never hangs on it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from tokenlean import checks
from tokenlean._caches import CACHE_MAX_BYTES, BoundedMemo
from tokenlean._estimate import EstimateCounter
from tokenlean._tiktoken import (
    TIKTOKEN_CACHE_KEYS,
    EncodingName,
    TiktokenCounter,
    VocabularyNotFoundError,
    find_vocabulary,
    load_encoding,
)
from tokenlean.transcript import Message, checked_messages

__all__ = [
    "DEFAULT_COUNTER",
    "MESSAGE_OVERHEAD",
    "TIKTOKEN_CACHE_KEYS",
    "EncodingName",
    "EstimateCounter",
    "MemoCounter",
    "TiktokenCounter",
    "TokenCounter",
    "VocabularyNotFoundError",
    "count_request",
    "default_counter",
    "find_vocabulary",
    "load_encoding",
    "memoized",
    "message_tokens",
    "tool_schema_text",
]

#: Tokens a chat format spends around each message (role markers, separators).
MESSAGE_OVERHEAD = 4


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that can count the tokens of a string."""

    def count(self, text: str) -> int: ...


#: The one counter every threshold counts with when it is given none (output and input
#: shortening, the retrieval gate, the context editor's trigger, budgets, token saving, the
#: proxy's figures). An estimate, so a decision never depends on which vocabularies a machine
#: has; exact counts are for measuring (:func:`default_counter`).
DEFAULT_COUNTER = EstimateCounter()


def default_counter() -> TokenCounter:
    """The counter to *measure* with: exact o200k_base when its vocabulary is local, else the
    estimate. Thresholds never use it (they count with :data:`DEFAULT_COUNTER`)."""
    try:
        return TiktokenCounter("o200k_base")
    except (VocabularyNotFoundError, ImportError):
        return EstimateCounter()


class MemoCounter:
    """A counter with a bounded memo: long runs count the same texts on every call.

    Texts shorter than 64 characters are counted directly (cheaper than remembering them).
    """

    def __init__(
        self, counter: TokenCounter, *, max_entries: int = 8192, max_bytes: int = CACHE_MAX_BYTES
    ) -> None:
        self.counter = checks.token_counter(counter, "counter")
        self._memo = BoundedMemo(counter.count, max_bytes=max_bytes, max_entries=max_entries)

    def count(self, text: str) -> int:
        if len(text) < 64:
            return self.counter.count(text)
        return int(self._memo(text))


def memoized(counter: TokenCounter) -> MemoCounter:
    """``counter`` with a memo of its own (itself when it already has one), for the object
    that counts with it: each middleware counts a text once, however many calls re-send it."""
    if isinstance(counter, MemoCounter):
        return counter
    return MemoCounter(counter)


# ---------------------------------------------------------------------------------------------
# Whole requests


def message_tokens(message: Message, counter: TokenCounter) -> int:
    """Tokens one message costs: its text, its tool calls, and the per-message overhead."""
    total = MESSAGE_OVERHEAD + counter.count(message.text)
    for call in message.tool_calls:
        total += counter.count(call.name) + counter.count(
            json.dumps(call.args, ensure_ascii=False, default=str)
        )
    return total


def tool_schema_text(tools: Iterable[Mapping[str, Any]]) -> str:
    """The tool schemas as the JSON a provider receives (stable key order)."""
    return json.dumps(list(tools), ensure_ascii=False, sort_keys=True, default=str)


def count_request(
    messages: Sequence[Message],
    counter: TokenCounter,
    *,
    system: str | None = None,
    tools: Sequence[Mapping[str, Any]] = (),
) -> int:
    """Tokens of a whole request: tool schemas, system prompt and every message."""
    checked_messages(messages)
    checks.token_counter(counter, "counter")
    if system is not None:
        checks.text(system, "system")
    checks.sequence(tools, "tools", of="tool schema mappings")
    total = sum(message_tokens(m, counter) for m in messages)
    if system:
        total += MESSAGE_OVERHEAD + counter.count(system)
    if tools:
        total += counter.count(tool_schema_text(tools))
    return total
