"""Which message gets which compression, and when: the framework-free token-saving planner.

:func:`plan_compressions` reads a neutral transcript and the compressions stored so far (the
middleware keeps them in agent state) and returns the new or changed ones. Each is computed once,
from the original text, so the bytes sent for a message change only when its entry changes, and
each change rewrites bytes the model was already sent (a prompt-cache break from that message on).

- Default (the reference behaviour): a tool output is head+tail truncated when it leaves the
  ``keep_recent_tool_messages`` window. With word compression on, a message is compressed at the
  "mid" ratio once it is ``perplexity_recent_cutoff`` calls old, and again (from the original) at
  the "old" ratio once it is ``perplexity_mid_cutoff`` calls old.
- ``compress_once=True``: a message is compressed once, by every lever on, at the ratio of its
  tier, when it has left the recent window of every lever, and never again. The result waits as
  *pending*; pending compressions are written into the prompt together, in one rewrite, once
  they pay for it within ``payback_calls`` calls: the tokens they remove, read from the cache at
  a tenth of the price on each later call, must cover the extra paid once for re-sending the
  already-sent messages from the first rewritten one on (Anthropic prices: a cache write costs
  1.25, a read 0.1). Of the pending ones, the rewrite starts where that margin is largest. A
  message not yet sent is rewritten for free: ``keep_recent_tool_messages=0`` compresses at first
  sight with no cache break at all.
"""

from __future__ import annotations

import functools
import itertools
import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from tokenlean.compress import (
    CompressionPolicy,
    Stage,
    compress_tool_output,
    content_digest,
    text_parts,
)
from tokenlean.cost import ANTHROPIC
from tokenlean.tokens import MESSAGE_OVERHEAD, TokenCounter
from tokenlean.transcript import Content, Message, content_text
from tokenlean.words import compress_words

logger = logging.getLogger(__name__)


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


@dataclass
class Plan:
    """New or changed entries by message id, and what they add to the stats."""

    updates: dict[str, CompressedEntry] = field(default_factory=dict)
    stats: Counter[str] = field(default_factory=Counter)


def plan_compressions(
    view: Sequence[Message],
    stored: Mapping[str, CompressedEntry],
    policy: CompressionPolicy,
    counter: TokenCounter,
) -> Plan:
    """The entries to add to ``stored`` for this transcript; a failing message is skipped."""
    plan = Plan()
    current: dict[int, CompressedEntry] = {}
    for index, (message, (tools_after, calls_ago)) in enumerate(
        zip(view, _ages(view), strict=True)
    ):
        if message.id is None or message.role not in ("tool", "assistant"):
            continue
        try:
            stage = policy.stage(message.role, tools_after, calls_ago)
            entry = _plan_one(message, stage, stored.get(message.id), policy, counter, plan)
        except Exception:
            logger.warning("could not compress message %s; left as is", message.id, exc_info=True)
            continue
        if entry is not None:
            current[index] = entry
    if policy.compress_once:
        _release(view, current, policy, plan, counter)
    _count(plan, stored)
    return plan


def _ages(view: Sequence[Message]) -> list[tuple[int, int]]:
    """Per message: tool messages after it, and assistant messages (model calls) after it."""
    tools = calls = 0
    out: list[tuple[int, int]] = []
    for message in reversed(view):
        out.append((tools, calls))
        tools += message.role == "tool"
        calls += message.role == "assistant"
    return out[::-1]


def _plan_one(
    message: Message,
    stage: Stage | None,
    previous: CompressedEntry | None,
    policy: CompressionPolicy,
    counter: TokenCounter,
    plan: Plan,
) -> CompressedEntry | None:
    """The message's entry from now on (new ones also go to ``plan.updates``)."""
    if previous is None and stage is None:
        return None
    if previous is not None and previous["source"] != content_digest(message.content):
        previous = None  # the message changed under us: its old entry no longer applies
    if previous is not None and (
        policy.compress_once or stage is None or stage.key == previous["stage"]
    ):
        plan.stats["perplexity_cache_hits"] += previous["classified"]
        return previous
    if stage is None:
        return None
    entry = build_entry(message.content, stage, policy, counter, applied=not policy.compress_once)
    if entry is None:
        return previous
    plan.updates[str(message.id)] = entry
    return entry


def _release(
    view: Sequence[Message],
    current: dict[int, CompressedEntry],
    policy: CompressionPolicy,
    plan: Plan,
    counter: TokenCounter,
) -> None:
    """Apply the batch of pending entries that pays back most within ``payback_calls``."""
    pending = sorted(i for i, e in current.items() if not e["applied"])
    if not pending:
        return
    first = pending[0]
    sent_end = max((i for i, m in enumerate(view) if m.role == "assistant"), default=0)
    rebilled = [0] * (max(sent_end, first) - first + 1)  # rebilled[j]: tokens of first+j..end
    for i in range(sent_end - 1, first - 1, -1):
        rebilled[i - first] = rebilled[i - first + 1] + _sent_tokens(
            view[i], current.get(i), counter
        )
    gain = policy.payback_calls * ANTHROPIC.cached_read  # per token removed
    loss = ANTHROPIC.uncached - ANTHROPIC.cached_read  # per token re-sent uncached
    saved = [current[i]["ht_tokens"] + current[i]["word_tokens"] for i in pending]
    best, best_margin = None, 0.0
    for k, start in enumerate(pending):
        margin = gain * sum(saved[k:]) - loss * rebilled[min(start, sent_end) - first]
        if (best is None and margin >= 0) or margin > best_margin:
            best, best_margin = k, margin
    if best is None:
        return
    for i in pending[best:]:
        released = current[i].copy()
        released["applied"] = True
        plan.updates[str(view[i].id)] = current[i] = released


def _sent_tokens(message: Message, entry: CompressedEntry | None, counter: TokenCounter) -> int:
    """Tokens of an already-sent message as the next prompt would send it."""
    if entry is not None and entry["content"] is not None:
        return MESSAGE_OVERHEAD + _count_text(counter, content_text(entry["content"]))
    return MESSAGE_OVERHEAD + _count_text(counter, message.text)


def _count_text(counter: TokenCounter, text: str) -> int:
    key: Any = counter  # hashable in practice; an unhashable one raises TypeError below
    try:
        return _memo_count(key, text)
    except TypeError:  # an unhashable counter: count without the memo
        return counter.count(text)


@functools.lru_cache(maxsize=8192)
def _memo_count(counter: Any, text: str) -> int:
    return int(counter.count(text))


def _count(plan: Plan, stored: Mapping[str, CompressedEntry]) -> None:
    """Add what the newly applied entries remove (beyond what their predecessors did)."""
    for message_id, entry in plan.updates.items():
        if not entry["applied"]:
            continue
        before = stored.get(message_id)
        if before is None or not before["applied"] or before["source"] != entry["source"]:
            before = _EMPTY
        plan.stats.update(
            compressions=entry["ht_chars"] > 0 and before["ht_chars"] == 0,
            chars_saved=entry["ht_chars"] - before["ht_chars"],
            tokens_saved=entry["ht_tokens"] - before["ht_tokens"],
            perplexity_compressions=entry["word_chars"] > 0 and entry["stage"] != before["stage"],
            perplexity_chars_saved=entry["word_chars"] - before["word_chars"],
            perplexity_tokens_saved=entry["word_tokens"] - before["word_tokens"],
        )


_EMPTY = CompressedEntry(
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
    policy: CompressionPolicy,
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


def _head_tail(text: str, policy: CompressionPolicy) -> str:
    return compress_tool_output(
        text,
        threshold_chars=policy.compress_threshold_chars,
        head_chars=policy.head_keep_chars,
        tail_chars=policy.tail_keep_chars,
    )


def _words(text: str, stage: Stage, policy: CompressionPolicy) -> str:
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


def _tokens(parts: Sequence[str], counter: TokenCounter) -> int:
    return sum(counter.count(p) for p in parts)
