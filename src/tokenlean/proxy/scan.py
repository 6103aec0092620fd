"""Reading a request body as the client wrote it: top-level values, and each message with the
exact JSON text it was sent as.

The statistics fingerprint every message on every request; the client's own text of a message
is the cheap thing to hash (re-serialising a 200k-token history costs tens of milliseconds, and
holds the interpreter while it runs). ``json``'s C scanner does the parsing, one value at a time.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


@dataclass(frozen=True, slots=True)
class ScannedBody:
    """A JSON object body: its top-level values, and the items of one list with their text."""

    values: dict[str, Any]  # every top-level key, the list included
    texts: dict[str, str]  # the JSON text of each top-level value
    items: list[tuple[Any, str]]  # (value, JSON text) of each element of the list


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _list_items(text: str, at: int) -> tuple[list[tuple[Any, str]], int]:
    """The elements of the array starting at ``at`` (its ``[``), and the index after it."""
    items: list[tuple[Any, str]] = []
    at = _skip(text, at + 1)
    if text[at] == "]":
        return items, at + 1
    while True:
        start = at
        value, at = _DECODER.raw_decode(text, at)
        items.append((value, text[start:at]))
        at = _skip(text, at)
        if text[at] == "]":
            return items, at + 1
        if text[at] != ",":
            raise ValueError(f"expected ',' at {at}")
        at = _skip(text, at + 1)


def _pairs(text: str, list_key: str) -> ScannedBody:
    values: dict[str, Any] = {}
    texts: dict[str, str] = {}
    items: list[tuple[Any, str]] = []
    at = _skip(text, 0)
    if text[at] != "{":
        raise ValueError("not an object")
    at = _skip(text, at + 1)
    while text[at] != "}":
        key, at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        if not isinstance(key, str) or text[at] != ":":
            raise ValueError(f"expected a key at {at}")
        start = at = _skip(text, at + 1)
        if key == list_key and text[at] == "[":
            items, at = _list_items(text, at)
            values[key] = [value for value, _ in items]
        else:
            values[key], at = _DECODER.raw_decode(text, at)
        texts[key] = text[start:at]
        at = _skip(text, at)
        if text[at] == ",":
            at = _skip(text, at + 1)
        elif text[at] != "}":
            raise ValueError(f"expected ',' or '}}' at {at}")
    if text[_skip(text, at + 1) :]:
        raise ValueError("data after the object")
    return ScannedBody(values, texts, items)


def scan_body(data: bytes, list_key: str) -> ScannedBody | None:
    """``data`` as a JSON object whose ``list_key`` list is split into items; None when it is
    not a JSON object."""
    try:
        return _pairs(data.decode("utf-8"), list_key)
    except (ValueError, IndexError):  # includes UnicodeDecodeError and JSONDecodeError
        return None
