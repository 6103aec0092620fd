"""Head+tail compression of tool outputs, the token-saving stats, settings and stages.

Framework-free pieces of :class:`tokenlean.langchain.TokenSavingMiddleware`; the planner that
decides which message gets what, and when, is :mod:`tokenlean.compress_plan`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from dataclasses import dataclass, fields

from tokenlean.transcript import Content
from tokenlean.words import WordClassifier, _check_ratio

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
#: ``compress_once`` writes pending compressions when they pay back within this many calls.
DEFAULT_PAYBACK_CALLS = 20


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

    def __post_init__(self) -> None:
        self._lock = threading.Lock()  # not a field: asdict/replace/copy leave it alone

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
            return {f.name: getattr(self, f.name) for f in fields(self)}

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


_INT_SETTINGS = (
    "compress_threshold_chars",
    "head_keep_chars",
    "tail_keep_chars",
    "keep_recent_tool_messages",
    "perplexity_recent_cutoff",
    "perplexity_mid_cutoff",
    "perplexity_min_content_words",
)


@dataclass(frozen=True, slots=True)
class CompressionPolicy:
    """The compression settings (the reference's names and defaults); ``classifier=None``: no
    word compression."""

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
    payback_calls: int = DEFAULT_PAYBACK_CALLS

    def __post_init__(self) -> None:
        for name in _INT_SETTINGS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        for name in ("perplexity_window_words", "payback_calls"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
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


def content_digest(content: object) -> str:
    """A short stable digest of message content (strings or content blocks)."""
    if isinstance(content, str):
        return _text_digest(content)
    data = json.dumps(content, ensure_ascii=True, sort_keys=True, default=str)
    return _text_digest(data)


@functools.lru_cache(maxsize=4096)  # str caches its hash, so a repeat costs one lookup
def _text_digest(text: str) -> str:
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:20]


def text_parts(content: Content) -> list[str] | None:
    """The texts of ``content`` when it is text only (a string or text blocks), else ``None``."""
    if isinstance(content, str):
        return [content]
    parts = [block.get("text") for block in content if block.get("type") == "text"]
    if len(parts) != len(content) or not all(isinstance(p, str) for p in parts):
        return None
    return [str(p) for p in parts]
