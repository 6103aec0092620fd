"""Codex's code mode: the tool calls inside a JavaScript cell.

In code mode every action is one call of an ``exec`` tool whose argument is JavaScript
(``const r = await tools.exec_command({cmd: "sed -n '1,80p' a.rs"}); text(r.output)``),
several such calls under ``Promise.all``, MCP tools as ``tools.mcp__server__tool({...})``,
``write_stdin`` and ``apply_patch``. :func:`cell_calls` finds each ``tools.NAME({...})`` and the
literal arguments of its object (strings, numbers, booleans; a value computed at run time is
left out and the call marked incomplete), so a cell is judged by the commands it runs. One pass
of a small tokenizer over at most :data:`MAX_CHARS` characters, then one walk over its tokens:
linear in the cell, and a longer cell is not judged (``None``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from tokenlean._caches import byte_bounded

__all__ = ["MAX_CHARS", "CellCall", "cell_calls"]

MAX_CHARS = 40_000
Literal_ = str | int | float | bool | None
#: ``(kind, value)``: a ``name``, ``number``, ``string`` (decoded), ``dynamic`` string (a template
#: with ``${}``), ``punct`` character; ``open`` ends the tokens of a string left open.
_Token = tuple[str, object]
_OPEN = ("open", None)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
#: After these a ``/`` opens a regular expression, not a division.
_BEFORE_REGEX = frozenset("(,=:[!&|?{};+-*%<>~^")
_NUMBER_CHARS = frozenset("0123456789abcdefABCDEFxXoO._+-n")


@dataclass(frozen=True, slots=True)
class CellCall:
    """One ``tools.NAME({...})`` in a cell: the tool's name, its literal arguments, and whether
    every argument was a literal (``complete``; a variable or a template with ``${}`` is not)."""

    tool: str
    args: Mapping[str, Literal_] = field(default_factory=lambda: MappingProxyType({}))
    complete: bool = True


@byte_bounded(max_entries=256)
def cell_calls(code: str) -> tuple[CellCall, ...] | None:
    """The tool calls in a cell, in order; ``None`` when ``code`` is longer than
    :data:`MAX_CHARS` or is not tokenized as JavaScript (a string left open). Memoized: a
    call is asked several questions, each about the cell's calls."""
    if not isinstance(code, str) or len(code) > MAX_CHARS:
        return None
    tokens = list(_tokens(code))
    if tokens and tokens[-1] == _OPEN:
        return None
    calls: list[CellCall] = []
    at = 0
    while at < len(tokens) - 3:
        if tokens[at] == ("name", "tools") and tokens[at + 1] == ("punct", "."):
            kind, name = tokens[at + 2]
            if kind == "name" and tokens[at + 3] == ("punct", "("):
                call, at = _call(str(name), tokens, at + 4)
                calls.append(call)
                continue
        at += 1
    return tuple(calls)


def _call(name: str, tokens: list[_Token], at: int) -> tuple[CellCall, int]:
    """The call whose argument list starts at ``at``; the position after what was read."""
    if at >= len(tokens) or tokens[at] != ("punct", "{"):
        return CellCall(name, complete=tokens[at : at + 1] == [("punct", ")")]), at
    args: dict[str, Literal_] = {}
    complete, at = True, at + 1
    while at < len(tokens):
        if tokens[at] == ("punct", "}"):
            return CellCall(name, MappingProxyType(args), complete), at + 1
        key_kind, key = tokens[at]
        value = tokens[at + 2] if at + 2 < len(tokens) else ("punct", "")
        after = tokens[at + 3] if at + 3 < len(tokens) else ("punct", "")
        literal = value[0] in ("string", "number") or value in _CONSTANTS
        if (
            key_kind in ("name", "string")
            and tokens[at + 1 : at + 2] == [("punct", ":")]
            and literal
            and after in (("punct", ","), ("punct", "}"))
        ):
            args[str(key)] = _CONSTANTS[value] if value in _CONSTANTS else _value(value)
            at += 4 if after == ("punct", ",") else 3
            continue
        complete = False
        after_value = _past_value(tokens, at)
        if after_value == at:  # a bracket closing what never opened: not an object literal
            break
        at = after_value
    return CellCall(name, MappingProxyType(args), False), at


_CONSTANTS: dict[_Token, Literal_] = {
    ("name", "true"): True,
    ("name", "false"): False,
    ("name", "null"): None,
}


def _value(token: _Token) -> Literal_:
    value = token[1]
    return value if isinstance(value, (str, int, float)) else None


def _past_value(tokens: list[_Token], at: int) -> int:
    """The position after the next ``,`` at this depth of an object (or at its ``}``)."""
    depth = 0
    while at < len(tokens):
        kind, text = tokens[at]
        if kind == "punct" and text in ("(", "[", "{"):
            depth += 1
        elif kind == "punct" and text in (")", "]", "}"):
            if depth == 0:
                return at
            depth -= 1
        elif kind == "punct" and text == "," and depth == 0:
            return at + 1
        at += 1
    return at


def _tokens(code: str) -> Iterator[_Token]:
    """Names, numbers, string literals (decoded; a template with ``${}`` is ``dynamic``),
    punctuation; comments and regular expressions skipped. A string left open ends the
    tokens with ``("dynamic", None)``."""
    at, end, last = 0, len(code), "("
    while at < end:
        char = code[at]
        if char.isspace():
            at += 1
            continue
        if code.startswith(("//", "/*"), at):
            stop = code.find("\n" if code[at + 1] == "/" else "*/", at + 2)
            at = end if stop < 0 else stop + (1 if code[at + 1] == "/" else 2)
            continue
        token, at = _token(code, at, last)
        if token is None:
            yield _OPEN
            return
        if token[0] != "regex":
            yield token
            last = str(token[1]) if token[0] == "punct" else "a"


def _token(code: str, at: int, last: str) -> tuple[_Token | None, int]:
    char = code[at]
    if char in "'\"`":
        return _string(code, at)
    if char == "/" and last in _BEFORE_REGEX:
        return ("regex", None), _past_regex(code, at)
    if char.isalpha() or char in "_$":
        stop = at + 1
        while stop < len(code) and (code[stop].isalnum() or code[stop] in "_$"):
            stop += 1
        return ("name", code[at:stop]), stop
    if char.isdigit():
        stop = at + 1
        while stop < len(code) and code[stop] in _NUMBER_CHARS:
            stop += 1
        return ("number", _number(code[at:stop])), stop
    return ("punct", char), at + 1


def _number(text: str) -> int | float | str:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _string(code: str, at: int) -> tuple[_Token | None, int]:
    """A string literal from its opening quote: its value, and the position after it."""
    quote, at = code[at], at + 1
    chars: list[str] = []
    dynamic = False
    while at < len(code):
        char = code[at]
        if char == quote:
            value = None if dynamic else "".join(chars)
            return ("dynamic" if dynamic else "string", value), at + 1
        if char == "\n" and quote != "`":
            return None, at
        if char == "\\":
            escaped, at = _escape(code, at + 1)
            chars.append(escaped)
            continue
        dynamic = dynamic or (quote == "`" and code.startswith("${", at))
        chars.append(char)
        at += 1
    return None, at


def _escape(code: str, at: int) -> tuple[str, int]:
    """The character a backslash escape stands for (``\\n``, ``\\u0041``, ``\\x41``)."""
    char = code[at : at + 1]
    if char in ("u", "x"):
        size = 4 if char == "u" else 2
        digits = code[at + 1 : at + 1 + size]
        if len(digits) == size and all(c in "0123456789abcdefABCDEF" for c in digits):
            return chr(int(digits, 16)), at + 1 + size
    if char == "\n":
        return "", at + 1
    return _ESCAPES.get(char, char), at + 1


def _past_regex(code: str, at: int) -> int:
    """The position after a regular expression literal (its flags included) on its line."""
    stop, in_class = at + 1, False
    while stop < len(code) and code[stop] != "\n":
        char = code[stop]
        if char == "\\":
            stop += 2
            continue
        if char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "/" and not in_class:
            stop += 1
            while stop < len(code) and code[stop].isalpha():
                stop += 1
            return stop
        stop += 1
    return stop
