"""Head+tail compression of tool outputs, and the content helpers the token-saving planner uses."""

from __future__ import annotations

import hashlib
import json

from tokenlean import checks
from tokenlean._caches import byte_bounded
from tokenlean.token_saving._policy import CompressionSettings
from tokenlean.transcript import Content

__all__ = ["compress_tool_output", "content_digest", "text_parts"]

_DEFAULTS = CompressionSettings()


def compress_tool_output(
    content: str,
    *,
    threshold_chars: int = _DEFAULTS.compress_threshold_chars,
    head_chars: int = _DEFAULTS.head_keep_chars,
    tail_chars: int = _DEFAULTS.tail_keep_chars,
) -> str:
    """Keep the head and tail of ``content`` when it is longer than ``threshold_chars``.

    Returns ``"{head}\\n\\n[... N chars truncated ...]\\n\\n{tail}"``, or ``content`` unchanged when
    it is within the threshold or when truncating would not make it shorter.
    """
    checks.text(content, "content")
    checks.integer(threshold_chars, "threshold_chars", at_least=0)
    checks.integer(head_chars, "head_chars", at_least=0)
    checks.integer(tail_chars, "tail_chars", at_least=0)
    if len(content) <= threshold_chars:
        return content
    omitted = len(content) - head_chars - tail_chars
    tail = content[len(content) - tail_chars :] if tail_chars > 0 else ""
    result = f"{content[:head_chars]}\n\n[... {omitted} chars truncated ...]\n\n{tail}"
    return result if omitted > 0 and len(result) < len(content) else content


def content_digest(content: object) -> str:
    """A short stable digest of message content (strings or content blocks)."""
    if isinstance(content, str):
        return _text_digest(content)
    data = json.dumps(content, ensure_ascii=True, sort_keys=True, default=str)
    return _text_digest(data)


@byte_bounded()  # str caches its hash, so a repeat costs one lookup
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
