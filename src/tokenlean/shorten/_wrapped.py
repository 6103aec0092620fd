"""Tool outputs wrapped in JSON: the text inside is what gets shortened, the wrapping stays.

Many agents hand the model a command's text inside a JSON envelope: older Codex CLIs send
``{"output": "...", "metadata": {"exit_code": 0, ...}}``, newer ones a short text header
(``Wall time 0.1 seconds`` / ``Output:``) followed by an object with ``chunk_id``, ``exit_code``
and ``output``; MCP servers return ``{"content": [{"type": "text", "text": "..."}]}`` and
harnesses ``{"stdout": ..., "stderr": ..., "returncode": ...}``. Read as JSON, such an output is a
record with one enormous string; read as text, it is one escaped line. Either way the document,
log or source file inside would be cut as if it were boilerplate.

An envelope is recognised by its structure, not by one agent's field names: optional short
header lines, then one or more JSON values reaching the end of the text, in which a single
multi-line string holds at least half of the JSON's characters. :func:`unwrap` finds it;
:meth:`Wrapped.wrap` puts a shortened body back as a JSON string literal in exactly the place
(every copy of it, when the envelope repeats the text in two fields), so the header and every
other field keep their bytes and the result stays valid JSON of the same shape.

Line numbers of the body are counted in :meth:`Wrapped.readable` (the header, then the body's
own lines): markers name those lines and :func:`readable` is what a line range is read from.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tokenlean.shorten._envelope import PAUSE_GC_ABOVE, collector_paused, split_envelope

__all__ = ["NESTING", "Wrapped", "readable", "unwrap"]

#: The header before the JSON: at most this many lines and characters.
HEADER_LINES = 12
HEADER_CHARS = 2_000
#: JSON values (Codex's output chunks) one envelope may hold.
MAX_VALUES = 8
#: How deep into the JSON the body is looked for, and how many values are looked at.
MAX_DEPTH = 4
MAX_NODES = 2_000
#: Envelopes opened one inside the other (a JSON record printed by a command Codex ran).
NESTING = 2
#: The names under which an envelope carries the real output (Codex, MCP ``content`` blocks,
#: harnesses and sandboxes), compared in lower case.
OUTPUT_KEYS = frozenset(
    {
        "output", "stdout", "stderr", "text", "content", "result", "results", "observation",
        "aggregated_output", "formatted_output", "combined_output", "response", "logs", "log",
    }
)  # fmt: skip
#: The body's share of the JSON text, at least.
BODY_SHARE = 0.5
_STARTS = ("{", "[", '"')
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class Wrapped:
    """``header`` + the JSON text split around every copy of the body's string literal.

    ``body`` is the string's value (``\\r\\n`` line ends read as ``\\n`` when every line ends
    so, and written back the same way); ``ascii`` says whether the literal escaped non-ASCII
    characters.
    """

    header: str
    parts: tuple[str, ...]
    body: str
    ascii: bool
    crlf: bool

    @property
    def body_line(self) -> int:
        """The 0-based line of :meth:`readable` where the body starts."""
        return self.header.count("\n")

    def readable(self) -> str:
        """The header and the body: the text whose lines the markers count."""
        return self.header + self.body

    def wrap(self, body: str) -> str:
        """The envelope with ``body`` in place of the original body."""
        if self.crlf:
            body = body.replace("\n", "\r\n")
        literal = json.dumps(body, ensure_ascii=self.ascii)
        return self.header + literal.join(self.parts)


def unwrap(text: str, parsed: Sequence[Any] | None = None) -> Wrapped | None:
    """The envelope around ``text``'s real output, when it has one (see the module's notes).

    ``parsed``: the caller already read ``text`` as these JSON values from its first non-blank
    character on (so a large record is parsed once)."""
    if parsed is not None:
        start = len(text) - len(text.lstrip())
        return _envelope(text, start, parsed) if _may_be_wrapped(text) else None
    for start in _json_starts(text):
        values = _values(text, start)
        if values is None:
            continue
        found = _envelope(text, start, values)
        if found is not None:
            return found
    return None


def readable(text: str) -> str:
    """``text`` as :func:`~tokenlean.shorten.shorten`'s markers count its lines: the headers of
    its envelopes (mini-swe-agent's, then up to :data:`NESTING` JSON ones) and the innermost
    body; ``text`` itself when it has no JSON envelope. A line range is read from this."""
    outer = split_envelope(text)
    body, headers = outer.body, ""
    for _ in range(NESTING):
        found = unwrap(body)
        if found is None:
            break
        body, headers = found.body, headers + found.header
    if body is outer.body:
        return text
    return outer.head + headers + body + outer.tail


def _may_be_wrapped(text: str) -> bool:
    """A cheap test first: an envelope's body has lines, so its literal has ``\\n`` escapes."""
    head = text[:HEADER_CHARS]
    return any(c in head for c in _STARTS) and "\\n" in text


def _json_starts(text: str) -> Iterator[int]:
    """Where a JSON value may start: at the text's first non-blank character, or at the start of
    one of its first :data:`HEADER_LINES` lines (after a short header)."""
    if not _may_be_wrapped(text):
        return
    head = text[:HEADER_CHARS]
    stripped = len(head) - len(head.lstrip())
    if head[stripped : stripped + 1] in _STARTS:
        yield stripped
        return
    at = 0
    for _ in range(HEADER_LINES):
        at = head.find("\n", at) + 1
        if at <= 0:
            return
        if head[at : at + 1] in _STARTS:
            yield at


def _values(text: str, start: int) -> list[Any] | None:
    """The JSON values from ``start`` to the end of ``text`` (blanks between and after them);
    ``None`` when anything else is there."""
    values: list[Any] = []
    at, end = start, len(text.rstrip())
    with collector_paused(end - start > PAUSE_GC_ABOVE):
        while at < end and len(values) < MAX_VALUES:
            try:
                value, at = _DECODER.raw_decode(text, at)
            except (ValueError, RecursionError):
                return None
            values.append(value)
            while at < end and text[at] in " \t\r\n":
                at += 1
    return values if at >= end and values else None


def _envelope(text: str, start: int, values: Sequence[Any]) -> Wrapped | None:
    """The envelope whose body is the longest multi-line output string in ``values`` (a value
    itself, or one under an output's name), when its literal makes up at least
    :data:`BODY_SHARE` of the JSON text."""
    body = max(_outputs(values), key=len, default="")
    if "\n" not in body:
        return None
    source = text[start:]
    for ascii_only in (False, True):
        literal = json.dumps(body, ensure_ascii=ascii_only)
        parts = source.split(literal)
        if len(parts) > 1:
            break
    else:  # written with escapes of its own (``\\/``, upper-case hex): leave it
        return None
    if len(literal) * (len(parts) - 1) < BODY_SHARE * len(source):
        return None
    crlf = body.count("\r\n") == body.count("\n")
    inner = body.replace("\r\n", "\n") if crlf else body
    return Wrapped(text[:start], tuple(parts), inner, ascii_only, crlf)


def _outputs(values: Sequence[Any]) -> Iterator[str]:
    """The strings in ``values`` that may be an output: a value that is a string, or a string
    under one of :data:`OUTPUT_KEYS`, at most :data:`MAX_DEPTH` deep and :data:`MAX_NODES`
    values looked at (an envelope is shallow; a deep or wide document is no envelope). A
    record's own text fields (an issue's ``body``) are the record's: JSON crushing reads them."""
    yield from (value for value in values if isinstance(value, str))
    stack: list[tuple[Any, int]] = [(value, 0) for value in values]
    seen = 0
    while stack and seen < MAX_NODES:
        value, depth = stack.pop()
        seen += 1
        if depth >= MAX_DEPTH:
            continue
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, str):
                    if str(key).lower() in OUTPUT_KEYS:
                        yield item
                else:
                    stack.append((item, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value if not isinstance(item, str))
