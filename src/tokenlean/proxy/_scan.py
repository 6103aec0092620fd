"""Reading a request body once, as the client wrote it: top-level values, and each message with
the exact JSON text it was sent as.

The proxy parses a body once (:func:`scan_body`): the rewrite reads its values, the statistics
its texts. They fingerprint every message on every request, and the client's own text of a
message is the cheap thing to hash (re-serialising a 200k-token history costs tens of
milliseconds, and holds the interpreter while it runs). ``json``'s C scanner does the parsing,
one value at a time, so a long history is also no single step that holds the interpreter.
The values are the ones ``json.loads`` gives for the same bytes, so the rewrite reads what it
always read, except that a number whose text a float or an int would lose is read as a
:class:`~tokenlean.proxy._numbers.Number` that writes that text again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from tokenlean._identity import ByIdentity, leading
from tokenlean.proxy._numbers import dumps, parse_float, parse_int
from tokenlean.proxy._recent import KeptList, RecentLists, RecentValues

__all__ = [
    "RECENT",
    "VALUES",
    "WRITTEN_MAX_BYTES",
    "ScannedBody",
    "Span",
    "compact",
    "read_body",
    "rewritten_body",
    "scan_body",
    "written_text",
]

Span = tuple[int, int]

#: Numbers keep the client's text where a float or an int would lose it (``1e400``, ``-0``).
_DECODER = json.JSONDecoder(parse_float=parse_float, parse_int=parse_int)
_SPACE = re.compile(r"[ \t\n\r]*")
#: The message lists of recent bodies: a re-sent history is compared, not parsed again.
RECENT = RecentLists()
#: Their other long values (``tools``, ``system``), compared the same way.
VALUES = RecentValues()
#: The JSON text of each message a rewrite wrote, by the message object: ``tokenlean.raw`` gives
#: the same object for the same edits while a history is re-sent (its ``_reuse``), so the splice
#: and the statistics serialise a shortened message once, not twice on every request.
WRITTEN_MAX_BYTES = 64 * 2**20
_WRITTEN: ByIdentity[str] = ByIdentity(max_entries=200_000, max_bytes=WRITTEN_MAX_BYTES)


@dataclass(frozen=True, slots=True)
class ScannedBody:
    """A JSON object body: its top-level values, and the items of one list with their text."""

    values: dict[str, Any]  # every top-level key, the list included
    texts: dict[str, str]  # the JSON text of each top-level value (a rewritten list: its items')
    items: list[tuple[Any, str]]  # (value, JSON text) of each element of the list
    # The text as the client sent it, and where each top-level value and list item lies in it
    # (a rewrite splices its changes in); None when the texts were rebuilt, not read.
    source: str | None = None
    spans: dict[str, Span] = field(default_factory=dict)
    item_spans: list[Span] = field(default_factory=list)
    # Characters of list items parsed anew, not taken from a recent list (:mod:`._recent`):
    # what is new in this body, which is what a rewrite has to plan.
    fresh: int = 0


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _list_items(text: str, at: int, spans: list[Span]) -> tuple[list[tuple[Any, str]], int, int]:
    """The elements of the array starting at ``at`` (its ``[``), the index after it, and the
    characters of the elements parsed anew; the span of each element is added to ``spans``.
    Elements the last list with the same first element held are taken from it where their text
    is here again: at once up to the first that is not there as it was, with the separator that
    followed it (:func:`_same`), then one by one (:mod:`._recent`)."""
    items: list[tuple[Any, str]] = []
    at = _skip(text, at + 1)
    if text[at] == "]":
        return items, at + 1, 0
    known: list[tuple[Any, str]] = []
    kept: KeptList | None = None
    first, same, fresh = len(spans), 0, 0
    while True:
        start = at
        item = _known(known, len(items), text, at)
        if item is None:
            value, at = _DECODER.raw_decode(text, at)
            item = (value, text[start:at])
            fresh += at - start
        else:
            at += len(item[1])
        if not items:
            kept, same = RECENT.find(item[1], partial(_same, text=text, at=start))
            if kept is not None:
                # the kept first message itself, so every message of a re-sent history is the
                # object it was the last time (what is derived from it is found by identity)
                known, item, fresh = kept.items, kept.items[0], 0
                if same > 1:  # the kept messages here again as they were: taken at once
                    shifted = kept.spans_at(start, same)
                    items.extend(known[: same - 1])
                    spans.extend(shifted[:-1])
                    item, (start, at) = known[same - 1], shifted[-1]
        items.append(item)
        spans.append((start, at))
        at = _skip(text, at)
        if text[at] == "]":
            RECENT.put(KeptList.of(items, text, spans[first:], kept, same), kept, same)
            return items, at + 1, fresh
        if text[at] != ",":
            raise ValueError(f"expected ',' at {at}")
        at = _skip(text, at + 1)


def _same(kept: KeptList, text: str, at: int) -> int:
    """How many of the kept list's items ``text`` holds again as they were, from ``at`` on (where
    the first one starts), each with the separator that followed it: one ``startswith`` each,
    at C speed. The last kept item counts only if it ends there too (a kept ``1`` is no match
    for a ``12``)."""
    # each kept item's start here, computed only as far as the texts agree (another list of
    # the same opening most often differs at once)
    shift = at - kept.starts[0]
    starts = map(shift.__add__, kept.starts) if shift else kept.starts
    same = leading(map(text.startswith, kept.chunks, starts))
    if same == len(kept.chunks):
        end = _skip(text, kept.starts[-1] + shift + len(kept.chunks[-1]))
        same -= not (end < len(text) and text[end] in ",]")
    return same


def _kept_value(key: str, text: str, at: int) -> tuple[str, Any] | None:
    """The text and value kept for ``key`` (:data:`VALUES`) that ``text`` holds at ``at``,
    ending there (the next character that is not a blank ends the object or separates the next
    key)."""
    for kept, value in VALUES.candidates(key):
        if text.startswith(kept, at):
            end = _skip(text, at + len(kept))
            if end < len(text) and text[end] in ",}":
                VALUES.used(key, kept)
                return kept, value
    return None


def _known(known: list[tuple[Any, str]], k: int, text: str, at: int) -> tuple[Any, str] | None:
    """The kept element ``k`` when ``text`` holds its very text at ``at`` and the element ends
    there (a kept ``1`` is no match for a ``12``)."""
    if k >= len(known) or not text.startswith(known[k][1], at):
        return None
    end = _skip(text, at + len(known[k][1]))
    return known[k] if end < len(text) and text[end] in ",]" else None


def _pairs(text: str, list_key: str) -> ScannedBody:
    values: dict[str, Any] = {}
    texts: dict[str, str] = {}
    items: list[tuple[Any, str]] = []
    spans: dict[str, Span] = {}
    item_spans: list[Span] = []
    fresh = 0
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
            item_spans.clear()  # a repeated key: the last one counts, as in json.loads
            items, at, fresh = _list_items(text, at, item_spans)
            values[key] = [value for value, _ in items]
            texts[key] = text[start:at]
        elif (kept := _kept_value(key, text, at)) is not None:
            texts[key], values[key] = kept
            at += len(kept[0])
        else:
            values[key], at = _DECODER.raw_decode(text, at)
            texts[key] = text[start:at]
            VALUES.put(key, texts[key], values[key])
        spans[key] = (start, at)
        at = _skip(text, at)
        if text[at] == ",":
            at = _skip(text, at + 1)
            if text[at] == "}":  # json.loads refuses a trailing comma, so the scanner does
                raise ValueError(f"expected a key at {at}")
        elif text[at] != "}":
            raise ValueError(f"expected ',' or '}}' at {at}")
    if text[_skip(text, at + 1) :]:
        raise ValueError("data after the object")
    return ScannedBody(values, texts, items, text, spans, item_spans, fresh)


def scan_body(data: bytes, list_key: str) -> ScannedBody | None:
    """``data`` as a JSON object whose ``list_key`` list is split into items; None when it is
    not a JSON object, or too deeply nested to read."""
    scanned = read_body(data, list_key)
    return scanned if isinstance(scanned, ScannedBody) else None


def read_body(data: bytes, list_key: str) -> ScannedBody | str:
    """:func:`scan_body`, saying why when ``data`` cannot be read."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    try:
        if text is None or text.startswith("\ufeff"):
            return _loaded(data, list_key)
        return _pairs(text, list_key)
    except RecursionError:
        return "nested too deeply to read"
    except (ValueError, IndexError):  # includes JSONDecodeError
        return "not a JSON object"


def _loaded(data: bytes, list_key: str) -> ScannedBody | str:
    """What ``json.loads`` also reads and the scanner does not (a byte-order mark, UTF-16 or 32,
    encoded surrogates), with texts rebuilt: they only name the values to the statistics."""
    body = json.loads(data, parse_float=parse_float, parse_int=parse_int)
    if not isinstance(body, dict):
        return "not a JSON object"
    texts = {key: compact(value) for key, value in body.items()}
    listed = body.get(list_key)
    items = [(v, compact(v)) for v in listed] if isinstance(listed, list) else []
    return ScannedBody(body, texts, items, fresh=len(data))


def compact(value: Any) -> str:
    """A value's JSON text as the proxy sends it in a rewritten body (characters as they are:
    "—" stays one character, not ``\\u2014``; a number as the client wrote it)."""
    return dumps(value, ensure_ascii=False)


def written_text(value: Any) -> str:
    """:func:`compact` of a value the proxy never mutates, kept by identity for a message (a
    mapping); any other value is serialised as it comes."""
    if not isinstance(value, Mapping):
        return compact(value)
    text = _WRITTEN.get(value)
    if text is None:
        text = compact(value)
        _WRITTEN.put(value, text, 128 + len(text))
    return text


def rewritten_body(original: ScannedBody, body: Mapping[str, Any], list_key: str) -> ScannedBody:
    """``body``, a rewrite of ``original``, read without parsing the bytes sent for it.

    A rewrite copies only what it changes, so a value that is the very object ``original`` holds
    keeps its text; the others get the text the proxy sends for them (:func:`compact`). A long
    history with a few shortened results costs the serialisation of those results, not another
    parse. Texts name values to the statistics: equal texts, equal values.
    """
    values = dict(body)
    listed = values.get(list_key)
    if listed is original.values.get(list_key) or not isinstance(listed, list):
        texts = {k: _text_of(k, v, original) for k, v in values.items()}
        kept = listed is original.values.get(list_key)
        return ScannedBody(values, texts, original.items if kept else [])
    texts = {k: _text_of(k, v, original) for k, v in values.items() if k != list_key}
    old = original.items
    items = [
        old[i] if i < len(old) and value is old[i][0] else (value, written_text(value))
        for i, value in enumerate(listed)
    ]
    # the list's own text is left out: its items have theirs, and nothing reads it whole
    return ScannedBody(values, texts, items)


def _text_of(key: str, value: Any, original: ScannedBody) -> str:
    kept = key in original.values and original.values[key] is value
    return original.texts[key] if kept else compact(value)
