"""Looking inside mini-swe-agent's output envelope, and reading a body as JSON."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["PAUSE_GC_ABOVE", "Envelope", "collector_paused", "parse_json", "split_envelope"]

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
        with collector_paused(len(stripped) > PAUSE_GC_ABOVE):
            return True, json.loads(stripped)
    except (ValueError, RecursionError):
        return False, None


#: Longer JSON is parsed with the cyclic garbage collector paused: a 50 MB array makes millions
#: of containers, and the collections they trigger tripled the parse time (1.4 s, not 0.45 s).
PAUSE_GC_ABOVE = 1 << 20


@contextmanager
def collector_paused(pause: bool) -> Iterator[None]:
    """The garbage collector off for the block when ``pause`` (and it was on)."""
    was_on = pause and gc.isenabled()
    if was_on:
        gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
