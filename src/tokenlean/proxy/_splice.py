"""Writing a rewritten body as the client's bytes with the rewrite's changes spliced in.

A rewrite changes a few tool results deep in a history; everything else (the system prompt,
tools, every message before the first edit, the client's spacing and escapes) goes upstream as
the exact bytes the client sent, so the provider's prompt cache sees the prefix it saw without
the proxy. Only the values the rewrite changed are serialised, with their characters as they
are (a CJK text keeps its size on the wire instead of doubling as ``\\uXXXX`` escapes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tokenlean.proxy._numbers import dumps
from tokenlean.proxy._scan import ScannedBody, Span, compact, written_text

__all__ = ["serialise"]

Edit = tuple[int, int, Any]  # replace source[start:end] by the JSON text of a value
Text = Callable[[Any], str]  # a value's JSON text


def serialise(original: ScannedBody, body: Mapping[str, Any], list_key: str) -> bytes:
    """``body``, a rewrite of ``original``, as bytes to forward: spliced into the client's
    text where ``original`` has one and the rewrite kept its keys, else written whole."""
    edits = _edits(original, body, list_key)
    if edits is None or original.source is None:
        return _utf8(dict(body), compact)
    # a shortened message's text is kept by the message object, which a re-sent history reuses
    return _spliced(original.source, edits)


def _utf8(value: Any, text: Text) -> bytes:
    """UTF-8 of ``text(value)``. A string the client sent as an escaped lone surrogate cannot
    be UTF-8: then the value is written escaped."""
    try:
        return text(value).encode("utf-8")
    except UnicodeEncodeError:
        return dumps(value, ensure_ascii=True).encode("utf-8")


def _spliced(source: str, edits: list[Edit]) -> bytes:
    """The client's text with the edits in, as UTF-8. Each piece is encoded on its own and the
    bytes joined: one non-ASCII character in a new value would otherwise widen the joined text
    of the whole body, and its encoding then cost a pass over four bytes a character."""
    pieces: list[bytes] = []
    at = 0
    for start, end, value in sorted(edits, key=lambda edit: edit[0]):
        pieces += [source[at:start].encode("utf-8"), _utf8(value, written_text)]
        at = end
    pieces.append(source[at:].encode("utf-8"))
    return b"".join(pieces)


def _edits(original: ScannedBody, body: Mapping[str, Any], list_key: str) -> list[Edit] | None:
    """The spans of ``original`` whose values ``body`` changed; None when it cannot be spliced
    (keys added, removed or moved)."""
    if original.source is None or list(body) != list(original.values):
        return None
    edits: list[Edit] = []
    for key, value in body.items():
        old = original.values[key]
        if _same(value, old):
            continue
        spans = original.item_spans
        if key == list_key and isinstance(value, list) and _parallel(value, old, spans):
            edits += _item_edits(value, original.items, spans)
        else:
            edits.append((*original.spans[key], value))
    return edits


def _parallel(new: list[Any], old: Any, spans: list[Span]) -> bool:
    return isinstance(old, list) and len(new) == len(old) == len(spans)


def _item_edits(new: list[Any], items: list[tuple[Any, str]], spans: list[Span]) -> list[Edit]:
    return [
        (start, end, value)
        for value, (was, _), (start, end) in zip(new, items, spans, strict=True)
        if not _same(value, was)
    ]


def _same(new: Any, old: Any) -> bool:
    """A rewrite copies only what it changes, so identity settles most values at no cost."""
    return new is old or (type(new) is type(old) and new == old)
