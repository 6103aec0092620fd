"""``json.dumps(value, ensure_ascii=False, indent=...)``, the same text at a few times the speed.

Python 3.11's C encoder serializes only without ``indent``; with it, ``json`` falls back to a
pure-Python chain of generators that costs about a microsecond per value, and an indented
record crushed three ways (:func:`~tokenlean.shorten._jsonc.crush_json`) took more time than
reading it. This writes the same characters with one plain recursive call per value: strings
through ``json``'s own C string encoder, numbers and constants as ``json`` writes them. Values of
any other type, and nesting deeper than :data:`_DEEPEST`, go to ``json.dumps`` itself, so its
errors and its limits stay what they were.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

__all__ = ["dumps_indented"]

#: Deeper records are left to ``json.dumps`` (and so raise where it raises).
_DEEPEST = 100
_INFINITY = float("inf")


class _Unsupported(Exception):
    """A value this writer leaves to ``json.dumps``."""


def dumps_indented(value: Any, indent: int | str) -> str:
    """``json.dumps(value, ensure_ascii=False, indent=indent)``."""
    pad = " " * indent if isinstance(indent, int) else indent
    out: list[str] = []
    try:
        _write(value, out, pad, "\n", 0)
    except _Unsupported:
        return json.dumps(value, ensure_ascii=False, indent=indent)
    return "".join(out)


def _write(value: Any, out: list[str], pad: str, newline: str, depth: int) -> None:
    """Append the text of ``value`` at the nesting whose line break is ``newline``."""
    if isinstance(value, str):
        out.append(encode_basestring(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(_float(value))
    elif depth >= _DEEPEST:
        raise _Unsupported
    elif isinstance(value, (list, tuple)):
        _write_list(value, out, pad, newline, depth)
    elif isinstance(value, dict):
        _write_dict(value, out, pad, newline, depth)
    else:
        raise _Unsupported


def _write_list(
    items: list[Any] | tuple[Any, ...], out: list[str], pad: str, newline: str, depth: int
) -> None:
    if not items:
        out.append("[]")
        return
    inner = newline + pad
    out.append("[")
    separator = inner
    for item in items:
        out.append(separator)
        _write(item, out, pad, inner, depth + 1)
        separator = "," + inner
    out.append(newline + "]")


def _write_dict(record: dict[Any, Any], out: list[str], pad: str, newline: str, depth: int) -> None:
    if not record:
        out.append("{}")
        return
    inner = newline + pad
    out.append("{")
    separator = inner
    for key, item in record.items():
        out.append(separator)
        out.append(encode_basestring(_key(key)))
        out.append(": ")
        _write(item, out, pad, inner, depth + 1)
        separator = "," + inner
    out.append(newline + "}")


def _key(key: Any) -> str:
    """A key as ``json`` writes it: a string as it is, a number or constant as its text."""
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _float(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    raise _Unsupported


def _float(value: float) -> str:
    """A float as ``json`` writes it (``allow_nan``: ``NaN`` and ``Infinity`` as JavaScript)."""
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)
