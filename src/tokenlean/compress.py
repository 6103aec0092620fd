"""Head+tail compression of tool outputs, the token-saving stats, and content digests.

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
