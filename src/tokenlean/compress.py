"""Head+tail compression of tool outputs, tiered word compression of older messages, and stats.

Framework-free core of :class:`tokenlean.langchain.TokenSavingMiddleware`. :func:`plan_compressions`
reads a neutral transcript and the compressions already made (kept in agent state), and returns
the new ones. Each compression is computed once from the original text and stored, so the bytes a
provider receives for a message change only when its *stage* changes:

- default (the reference behaviour): a tool output is head+tail truncated when it leaves the
  ``keep_recent_tool_messages`` window, and word-compressed at the "mid" ratio when it is
  ``perplexity_recent_cutoff`` calls old, then again (from the original) at the "old" ratio when
  it is ``perplexity_mid_cutoff`` calls old. Every stage change rewrites bytes already sent.
- ``compress_once=True``: a message is compressed once, with every lever, when it first leaves
  the recent window (both windows when both levers are on), and never again: one rewrite each.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TypedDict

from tokenlean.tokens import TokenCounter
from tokenlean.transcript import Content, Message
from tokenlean.words import WordClassifier, _check_ratio, compress_words

logger = logging.getLogger(__name__)

DEFAULT_COMPRESS_THRESHOLD_CHARS = 1800
DEFAULT_HEAD_KEEP_CHARS = 900
DEFAULT_TAIL_KEEP_CHARS = 700
DEFAULT_KEEP_RECENT_TOOL_MESSAGES = 2
DEFAULT_PERPLEXITY_RECENT_CUTOFF = 3
DEFAULT_PERPLEXITY_MID_CUTOFF = 10
DEFAULT_PERPLEXITY_KEEP_RATIO_MID = 0.55
DEFAULT_PERPLEXITY_KEEP_RATIO_OLD = 0.30
DEFAULT_PERPLEXITY_WINDOW_WORDS = 50
DEFAULT_PERPLEXITY_MIN_CONTENT_WORDS = 30


def compress_tool_output(
    content: str,
    *,
    threshold_chars: int = DEFAULT_COMPRESS_THRESHOLD_CHARS,
    head_chars: int = DEFAULT_HEAD_KEEP_CHARS,
    tail_chars: int = DEFAULT_TAIL_KEEP_CHARS,
) -> str:
    """Keep the head and tail of ``content`` when it is longer than ``threshold_chars``.

    Returns ``"{head}\\n\\n[... N chars truncated ...]\\n\\n{tail}"``, or ``content`` unchanged when
    it is within the threshold or when truncating would not make it shorter.
    """
    if len(content) <= threshold_chars:
        return content
    omitted = len(content) - head_chars - tail_chars
    tail = content[len(content) - tail_chars :] if tail_chars > 0 else ""
    result = f"{content[:head_chars]}\n\n[... {omitted} chars truncated ...]\n\n{tail}"
    return result if omitted > 0 and len(result) < len(content) else content


@dataclass
class TokenSavingStats:
    """Running counters of one middleware instance; safe to update from many threads at once.

    The reference fields, plus token (o200k or the configured counter) savings next to each
    character figure.
    """

    compressions: int = 0
    chars_saved: int = 0
    tokens_saved: int = 0
    early_exits: int = 0
    perplexity_compressions: int = 0
    perplexity_chars_saved: int = 0
    perplexity_tokens_saved: int = 0
    perplexity_cache_hits: int = 0
    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    def add(self, **deltas: int) -> None:
        """Add to several counters atomically (unknown names raise ``AttributeError``)."""
        with self._lock:
            for name, delta in deltas.items():
                if name.startswith("_") or not hasattr(self, name):
                    raise AttributeError(f"TokenSavingStats has no counter {name!r}")
                setattr(self, name, getattr(self, name) + delta)

    def as_dict(self) -> dict[str, int]:
        """A consistent snapshot of every counter."""
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if f.init}

    def __getstate__(self) -> dict[str, int]:
        return self.as_dict()

    def __setstate__(self, state: dict[str, int]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Stage:
    """What a message gets: head+tail truncation, and word compression at ``keep_ratio``."""

    head_tail: bool
    keep_ratio: float | None

    @property
    def key(self) -> str:
        ratio = "-" if self.keep_ratio is None else str(self.keep_ratio)
        return f"{'ht' if self.head_tail else '-'}:{ratio}"


@dataclass(frozen=True, slots=True)
class CompressionPolicy:
    """The compression settings of a :class:`TokenSavingMiddleware` (spec names and defaults).

    ``classifier=None`` turns word compression off.
    """

    compress_threshold_chars: int = DEFAULT_COMPRESS_THRESHOLD_CHARS
    head_keep_chars: int = DEFAULT_HEAD_KEEP_CHARS
    tail_keep_chars: int = DEFAULT_TAIL_KEEP_CHARS
    keep_recent_tool_messages: int = DEFAULT_KEEP_RECENT_TOOL_MESSAGES
    enable_compression: bool = True
    classifier: WordClassifier | None = None
    perplexity_recent_cutoff: int = DEFAULT_PERPLEXITY_RECENT_CUTOFF
    perplexity_mid_cutoff: int = DEFAULT_PERPLEXITY_MID_CUTOFF
    perplexity_keep_ratio_mid: float = DEFAULT_PERPLEXITY_KEEP_RATIO_MID
    perplexity_keep_ratio_old: float = DEFAULT_PERPLEXITY_KEEP_RATIO_OLD
    perplexity_window_words: int = DEFAULT_PERPLEXITY_WINDOW_WORDS
    perplexity_min_content_words: int = DEFAULT_PERPLEXITY_MIN_CONTENT_WORDS
    compress_once: bool = False

    def __post_init__(self) -> None:
        for name in (
            "compress_threshold_chars",
            "head_keep_chars",
            "tail_keep_chars",
            "keep_recent_tool_messages",
            "perplexity_recent_cutoff",
            "perplexity_mid_cutoff",
            "perplexity_min_content_words",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        window = self.perplexity_window_words
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"perplexity_window_words must be a positive integer, got {window!r}")
        if self.perplexity_mid_cutoff < self.perplexity_recent_cutoff:
            raise ValueError("perplexity_mid_cutoff must be >= perplexity_recent_cutoff")
        _check_ratio("perplexity_keep_ratio_mid", self.perplexity_keep_ratio_mid)
        _check_ratio("perplexity_keep_ratio_old", self.perplexity_keep_ratio_old)
        if self.classifier is not None and not callable(self.classifier):
            raise ValueError("perplexity_classifier must be callable (words -> keep flags)")

    def tier(self, calls_ago: int) -> float | None:
        """The keep ratio for a message ``calls_ago`` calls old (``None``: recent, or words off)."""
        if self.classifier is None or calls_ago < self.perplexity_recent_cutoff:
            return None
        if calls_ago < self.perplexity_mid_cutoff:
            return self.perplexity_keep_ratio_mid
        return self.perplexity_keep_ratio_old

    def stage(self, role: str, tools_after: int, calls_ago: int) -> Stage | None:
        """What a message with this role and age should get now, or ``None`` for nothing."""
        head_tail = self.enable_compression and role == "tool"
        ratio = self.tier(calls_ago)
        old_for_head_tail = tools_after >= self.keep_recent_tool_messages
        if self.compress_once:
            if (head_tail and not old_for_head_tail) or (self.classifier and ratio is None):
                return None  # still inside the recent window of some lever
        else:
            head_tail = head_tail and old_for_head_tail
        return Stage(head_tail, ratio) if head_tail or ratio is not None else None


class CompressedEntry(TypedDict):
    """One message's stored compression (JSON-friendly, so checkpointers persist it)."""

    source: str  # digest of the original content; the entry applies only to that content
    stage: str
    content: str | list[dict[str, Any]] | None  # None: the stage left the text as it was
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


def content_digest(content: object) -> str:
    """A short stable digest of message content (strings or content blocks)."""
    data = json.dumps(content, ensure_ascii=True, sort_keys=True, default=str)
    return hashlib.sha256(data.encode("ascii")).hexdigest()[:20]


def _ages(view: Sequence[Message]) -> list[tuple[int, int]]:
    """Per message: tool messages after it, and assistant messages (model calls) after it."""
    tools = calls = 0
    out: list[tuple[int, int]] = []
    for message in reversed(view):
        out.append((tools, calls))
        tools += message.role == "tool"
        calls += message.role == "assistant"
    return out[::-1]


def plan_compressions(
    view: Sequence[Message],
    stored: Mapping[str, CompressedEntry],
    policy: CompressionPolicy,
    counter: TokenCounter,
) -> Plan:
    """The compressions to add to ``stored`` for this transcript; a failing message is skipped."""
    plan = Plan()
    for message, (tools_after, calls_ago) in zip(view, _ages(view), strict=True):
        if message.id is None or message.role not in ("tool", "assistant"):
            continue
        try:
            stage = policy.stage(message.role, tools_after, calls_ago)
            _plan_one(message, stage, stored.get(message.id), policy, counter, plan)
        except Exception:
            logger.warning("could not compress message %s; left as is", message.id, exc_info=True)
    return plan


def _plan_one(
    message: Message,
    stage: Stage | None,
    previous: CompressedEntry | None,
    policy: CompressionPolicy,
    counter: TokenCounter,
    plan: Plan,
) -> None:
    if previous is None and stage is None:
        return
    source = content_digest(message.content)
    if previous is not None and previous["source"] == source:
        if policy.compress_once or stage is None or stage.key == previous["stage"]:
            plan.stats["perplexity_cache_hits"] += previous["classified"]
            return
    else:
        previous = None
    if stage is None:
        return
    entry = build_entry(message.content, stage, policy, counter, source=source)
    if entry is None:
        return
    plan.updates[str(message.id)] = entry
    before = previous or _EMPTY
    plan.stats.update(
        compressions=entry["ht_chars"] > 0 and before["ht_chars"] == 0,
        chars_saved=entry["ht_chars"] - before["ht_chars"],
        tokens_saved=entry["ht_tokens"] - before["ht_tokens"],
        perplexity_compressions=entry["word_chars"] > 0,
        perplexity_chars_saved=entry["word_chars"] - before["word_chars"],
        perplexity_tokens_saved=entry["word_tokens"] - before["word_tokens"],
    )


_EMPTY = CompressedEntry(
    source="",
    stage="",
    content=None,
    classified=False,
    ht_chars=0,
    ht_tokens=0,
    word_chars=0,
    word_tokens=0,
)


def text_parts(content: Content) -> list[str] | None:
    """The texts of ``content`` when it is text only (a string or text blocks), else ``None``."""
    if isinstance(content, str):
        return [content]
    parts = [block.get("text") for block in content if block.get("type") == "text"]
    if len(parts) != len(content) or not all(isinstance(p, str) for p in parts):
        return None
    return [str(p) for p in parts]


def _with_parts(content: Content, parts: Sequence[str]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return parts[0]
    return [{**block, "text": text} for block, text in zip(content, parts, strict=True)]


def build_entry(
    content: Content,
    stage: Stage,
    policy: CompressionPolicy,
    counter: TokenCounter,
    *,
    source: str,
) -> CompressedEntry | None:
    """``content`` compressed at ``stage``, from scratch; ``None`` when nothing is eligible."""
    parts = text_parts(content)
    if parts is None:
        return None
    ht = stage.head_tail and any(len(p) > policy.compress_threshold_chars for p in parts)
    words = stage.keep_ratio is not None and any(
        len(p.split()) >= policy.perplexity_min_content_words for p in parts
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
        source=source,
        stage=stage.key,
        content=_with_parts(content, final) if changed else None,
        classified=words,
        ht_chars=_chars(parts) - _chars(truncated),
        ht_tokens=n_parts - n_truncated,
        word_chars=_chars(truncated) - _chars(final),
        word_tokens=n_truncated - n_final,
    )


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
