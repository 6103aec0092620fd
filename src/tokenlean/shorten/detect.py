"""Telling content kinds apart, and looking inside mini-swe-agent's output envelope."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tokenlean.shorten.code import looks_like_code

_OPEN = "<output>\n"
_CLOSE = "</output>"


@dataclass(frozen=True, slots=True)
class Envelope:
    """``text == head + body + tail``; ``body_line`` is the 0-based line where ``body`` starts."""

    head: str
    body: str
    tail: str
    body_line: int


def split_envelope(text: str) -> Envelope:
    """Separate ``<returncode>N</returncode>\\n<output>\\n ... </output>`` from the output."""
    if text.startswith("<returncode>"):
        at = text.find(_OPEN, 0, 200)
        end = text.rstrip().rfind(_CLOSE)
        if at >= 0 and end > at and text[end:].strip() == _CLOSE:
            start = at + len(_OPEN)
            return Envelope(text[:start], text[start:end], text[end:], text[:start].count("\n"))
    return Envelope("", text, "", 0)


def parse_json(body: str) -> tuple[bool, Any]:
    """``(True, value)`` when ``body`` is one JSON object or array."""
    stripped = body.strip()
    if not stripped or stripped[0] not in "[{" or stripped[-1] not in "]}":
        return False, None
    try:
        return True, json.loads(stripped)
    except (ValueError, RecursionError):
        return False, None


def looks_like_source(body: str) -> bool:
    return looks_like_code(body.split("\n", 400)[:400])
