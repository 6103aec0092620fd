"""JSON numbers that keep the text the client wrote them in.

Python reads ``1e400`` as ``inf`` (written back as ``Infinity``, which no provider reads as
JSON), ``1E+2`` as ``100.0``, ``-0`` as ``0`` and ``0.1000000000000000055511151231257827`` as
``0.1``. A rewrite sends a changed message again, so a number in it must go as it came: the
parser gives such a number as a :class:`Number` (a float, or an int for ``-0``, to every
reader) holding its text, and :func:`dumps` writes that text. A number a float or an int keeps
exactly (nearly all of them) is parsed as usual, so a body without such numbers serialises with
``json``'s C encoder as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Number", "dumps", "parse_float", "parse_int"]

#: A leaf's JSON text (a string, ``true``, a plain number...).
Text = Callable[[Any], str]
#: Not empty once a :class:`Number` or a ``-0`` was made in this process: until then no value can
#: hold one, and :func:`dumps` need not look for them (a body re-serialised per request).
_CREATED: list[bool] = []
_ENCODERS = {
    ascii: json.JSONEncoder(ensure_ascii=ascii, separators=(",", ":")).encode
    for ascii in (False, True)
}


class Number(float):
    """A float that writes itself as the text it was read from."""

    __slots__ = ("text",)
    text: str

    def __new__(cls, value: float, text: str) -> Number:
        if not _CREATED:  # once is enough to tell
            _CREATED.append(True)
        made = super().__new__(cls, value)
        made.text = text
        return made

    def __reduce__(self) -> tuple[type[Number], tuple[float, str]]:
        return Number, (float(self), self.text)


class _NegativeZero(int):
    """``-0``: zero to every reader, ``-0`` on the wire (int subclasses cannot have slots)."""

    text = "-0"

    def __new__(cls) -> _NegativeZero:
        if not _CREATED:  # once is enough to tell
            _CREATED.append(True)
        return super().__new__(cls, 0)

    def __reduce__(self) -> tuple[type[_NegativeZero], tuple[()]]:
        return _NegativeZero, ()


def parse_float(text: str) -> float:
    """``json``'s ``parse_float``: a float, or a :class:`Number` when a float loses the text."""
    value = float(text)
    return value if repr(value) == text else Number(value, text)


def parse_int(text: str) -> int:
    """``json``'s ``parse_int``: an int (only ``-0`` has a text an int loses)."""
    return _NegativeZero() if text == "-0" else int(text)


def dumps(value: Any, *, ensure_ascii: bool) -> str:
    """``value`` as compact JSON, each :class:`Number` as its own text."""
    leaf: Text = _ENCODERS[ensure_ascii]
    if not _CREATED or not _holds_number(value):
        return leaf(value)
    out: list[str] = []
    _write(value, out, leaf)
    return "".join(out)


def _holds_number(value: Any) -> bool:
    if isinstance(value, Number | _NegativeZero):
        return True
    if isinstance(value, Mapping):
        return any(_holds_number(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_number(v) for v in value)
    return False


def _write(value: Any, out: list[str], leaf: Text) -> None:
    if isinstance(value, Number | _NegativeZero):
        out.append(value.text)
    elif isinstance(value, Mapping):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            out += [",", _key(key, leaf), ":"] if i else [_key(key, leaf), ":"]
            _write(item, out, leaf)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out, leaf)
        out.append("]")
    else:
        out.append(leaf(value))


def _key(key: Any, leaf: Text) -> str:
    """A key as ``json`` writes it: a string, or a number, boolean or null made one."""
    if isinstance(key, str):
        return leaf(key)
    return leaf(leaf(key))  # e.g. 1 -> "1", True -> "true"; other types raise, as in json
