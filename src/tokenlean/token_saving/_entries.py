"""One message's stored compression: what it holds (:class:`CompressedEntry`), how it is built
from the original content at a stage (head+tail, then words), and the tokens a message is sent
as once its entry applies."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from tokenlean.token_saving._head_tail import compress_tool_output, content_digest, text_parts
from tokenlean.token_saving._policy import CompressionSettings, Stage
from tokenlean.token_saving._words import compress_words
from tokenlean.tokens import DEFAULT_COUNTER, MESSAGE_OVERHEAD, TokenCounter
from tokenlean.transcript import Content, Message, content_text

__all__ = [
    "EMPTY_ENTRY",
    "EXACT_COUNT_CHARS",
    "CompressedEntry",
    "applied_entry",
    "build_entry",
    "sent_message_tokens",
    "sent_tokens",
]


class CompressedEntry(TypedDict):
    """One message's stored compression (JSON-friendly, so checkpointers persist it)."""

    source: str  # digest of the original content; the entry applies only to that content
    stage: str
    content: str | list[dict[str, Any]] | None  # None: the stage left the text as it was
    applied: bool  # False: computed, waiting to be written into the prompt (compress_once)
    classified: bool
    ht_chars: int
    ht_tokens: int
    word_chars: int
    word_tokens: int


def applied_entry(entry: CompressedEntry | None) -> CompressedEntry | None:
    return entry if entry is not None and entry["applied"] else None


def sent_message_tokens(
    message: Message, entry: CompressedEntry | None, counter: TokenCounter
) -> int:
    """Tokens of a message as the next prompt sends it (``entry``: its applied compression)."""
    if entry is not None and entry["content"] is not None:
        return MESSAGE_OVERHEAD + _tokens([content_text(entry["content"])], counter)
    return MESSAGE_OVERHEAD + _tokens([message.text], counter)


def sent_tokens(
    view: Sequence[Message], entries: Mapping[str, CompressedEntry], counter: TokenCounter
) -> int:
    """Tokens of ``view``'s messages as they are sent, stored compressions applied."""
    return sum(
        sent_message_tokens(
            m, applied_entry(entries.get(m.id)) if m.id is not None else None, counter
        )
        for m in view
    )


#: What an entry that removed nothing holds (what the stats count a new entry against).
EMPTY_ENTRY = CompressedEntry(
    source="",
    stage="",
    content=None,
    applied=True,
    classified=False,
    ht_chars=0,
    ht_tokens=0,
    word_chars=0,
    word_tokens=0,
)


def build_entry(
    content: Content,
    stage: Stage,
    policy: CompressionSettings,
    counter: TokenCounter,
    *,
    applied: bool = True,
) -> CompressedEntry | None:
    """``content`` compressed at ``stage``, from scratch; ``None`` when nothing is eligible."""
    parts = text_parts(content)
    if parts is None:
        return None
    ht = stage.head_tail and any(len(p) > policy.compress_threshold_chars for p in parts)
    words = stage.keep_ratio is not None and any(
        _has_words(p, policy.perplexity_min_content_words) for p in parts
    )
    if not (ht or words):
        return None
    truncated = [_head_tail(p, policy) if ht else p for p in parts]
    final = [_words(p, stage, policy) for p in truncated] if words else truncated
    changed = final != parts
    n_parts = _tokens(parts, counter) if changed else 0
    n_truncated = _tokens(truncated, counter) if changed and ht else n_parts
    n_final = _tokens(final, counter) if changed and words else n_truncated
    return CompressedEntry(
        source=content_digest(content),
        stage=stage.key,
        content=_with_parts(content, final) if changed else None,
        applied=applied or not changed,
        classified=words,
        ht_chars=_chars(parts) - _chars(truncated),
        ht_tokens=n_parts - n_truncated,
        word_chars=_chars(truncated) - _chars(final),
        word_tokens=n_truncated - n_final,
    )


_WORD = re.compile(r"\S+")


def _has_words(text: str, n: int) -> bool:
    """Whether ``text`` has at least ``n`` words, reading no further than its ``n``-th word
    (``len(text.split())`` would make a string of every word of a large output first)."""
    return sum(1 for _ in itertools.islice(_WORD.finditer(text), n)) >= n


def _with_parts(content: Content, parts: Sequence[str]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return parts[0]
    return [{**block, "text": text} for block, text in zip(content, parts, strict=True)]


def _head_tail(text: str, policy: CompressionSettings) -> str:
    return compress_tool_output(
        text,
        threshold_chars=policy.compress_threshold_chars,
        head_chars=policy.head_keep_chars,
        tail_chars=policy.tail_keep_chars,
    )


def _words(text: str, stage: Stage, policy: CompressionSettings) -> str:
    if policy.classifier is None or stage.keep_ratio is None:
        return text
    return compress_words(
        text,
        policy.classifier,
        keep_ratio=stage.keep_ratio,
        window_words=policy.perplexity_window_words,
        min_content_words=policy.perplexity_min_content_words,
    )


def _chars(parts: Sequence[str]) -> int:
    return sum(len(p) for p in parts)


#: Texts longer than this are counted with the fast estimate in the stats (an exact count of a
#: 50 MB output takes seconds, for a figure only the stats report).
EXACT_COUNT_CHARS = 1_000_000


def _tokens(parts: Sequence[str], counter: TokenCounter) -> int:
    return sum((DEFAULT_COUNTER if len(p) > EXACT_COUNT_CHARS else counter).count(p) for p in parts)
