"""A :data:`~tokenlean.token_saving._words.WordClassifier` backed by a small Anthropic model.

The model labels numbered words keep or drop (LLMLingua-2 style, prompt-only: the Messages API
returns no log-probabilities). Any failure (API error, timeout, rate limit, a reply that is not a
valid list of indices) falls back to the offline heuristic at the same keep ratio, so the
middleware never breaks because of the classifier. Needs only an ``anthropic.Anthropic``-like
client; the ``anthropic`` package itself is not imported here.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from tokenlean import checks
from tokenlean.token_saving._words import (
    DEFAULT_KEEP_RATIO,
    RatioClassifier,
    check_keep_ratio,
    heuristic_classifier,
)

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_TIMEOUT_SECONDS",
    "make_anthropic_classifier",
    "parse_keep_indices",
]

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "claude-haiku-4-5-20251001"
DEFAULT_TIMEOUT_SECONDS = 20.0

_SYSTEM = (
    "You compress text from an agent's history by choosing which numbered words to KEEP. "
    "Keep about {percent}% of the words.\n"
    "Always keep: numbers, identifiers, file paths, code, operators, error names, negations and "
    "anything the agent may need to quote later.\n"
    "Drop first: filler, hedges, politeness, repetition, words the meaning survives without.\n"
    "Reply with a JSON array of the 1-based indices of the words to KEEP, and nothing else."
)
_ARRAY = re.compile(r"\[[^\[\]]*\]")


def make_anthropic_classifier(
    client: Any,
    *,
    model: str = DEFAULT_MODEL,
    target_keep_ratio: float = DEFAULT_KEEP_RATIO,
    timeout: float | None = DEFAULT_TIMEOUT_SECONDS,
) -> RatioClassifier:
    """Wrap ``client.messages.create`` as a word classifier aiming to keep ``target_keep_ratio``.

    A ``keep_ratio`` passed at call time (the middleware passes each tier's ratio) overrides
    ``target_keep_ratio``. ``timeout`` (seconds) is sent with each request; ``None`` leaves the
    client's own timeout.
    """
    check_keep_ratio("target_keep_ratio", target_keep_ratio)
    checks.text(model, "model", blank=False)
    if timeout is not None:
        checks.number(timeout, "timeout", above=0)
    wanted = "an anthropic.Anthropic exposing messages.create(...)"
    checks.provides(client, "client", ("messages.create",), wanted)
    extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}

    def classify(words: list[str], *, keep_ratio: float | None = None) -> list[bool]:
        ratio = target_keep_ratio if keep_ratio is None else keep_ratio
        if not words:
            return []
        try:
            reply = client.messages.create(
                model=model,
                max_tokens=min(2048, max(256, 6 * len(words))),
                system=_SYSTEM.format(percent=round(100 * ratio)),
                messages=[{"role": "user", "content": _numbered(words)}],
                **extra,
            )
            keep = parse_keep_indices(_reply_text(reply), len(words))
        except Exception as exc:  # any client failure: fall back, never raise into the agent
            logger.warning("anthropic word classifier failed (%s); using the heuristic", exc)
            keep = None
        if keep is None:
            return heuristic_classifier(words, keep_ratio=ratio)
        return [i + 1 in keep for i in range(len(words))]

    return classify


def _numbered(words: list[str]) -> str:
    lines = "\n".join(f"{i}: {word}" for i, word in enumerate(words, start=1))
    return f"Words:\n{lines}\n\nJSON array of the indices to KEEP:"


def _reply_text(reply: Any) -> str:
    return "".join(
        block.text
        for block in getattr(reply, "content", None) or []
        if getattr(block, "type", None) == "text"
    )


def parse_keep_indices(text: str, n: int) -> set[int] | None:
    """The 1-based indices in the first JSON array of ``text``; ``None`` unless all are valid.

    An empty array (drop everything), a non-integer or an index outside ``1..n`` makes the whole
    reply invalid, since a classifier that answers that way has misunderstood the task.
    """
    match = _ARRAY.search(text)
    if match is None:
        logger.warning("anthropic word classifier reply holds no JSON array")
        return None
    try:
        values = json.loads(match.group())
    except ValueError:
        logger.warning("anthropic word classifier reply is not valid JSON")
        return None
    if not values or not all(type(v) is int and 1 <= v <= n for v in values):
        logger.warning("anthropic word classifier reply has invalid indices")
        return None
    return set(values)
