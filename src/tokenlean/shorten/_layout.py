"""How a run's output is laid out: a header about the run, then what it printed, in parts.

Codex reports each command or code-mode cell as a few short lines about the run (``Script
completed`` / ``Wall time 0.6 seconds`` / ``Output:``; ``Exit code: 0`` in older CLIs), perhaps
notes of its own (``Warning: truncated output (original token count: 3031)`` / ``Total output
lines: 237``, a blank line after), then what ran printed. :func:`header_length` finds that
header by its shape: a lone label line (``Output:``) after at most four short lines, and the
notes after it. What a script printed is often several things in a row: JSON values, each
whole on its lines, text between them, sections under labels (``=== a.rs ===``,
``==> a <==``). :func:`parts` gives their line ranges, so each is shortened by its own kind.
Every test is linear: lines are looked at once, JSON values found never overlap, and at most
:data:`MOST_MISSES` tries to decode one find nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from tokenlean.shorten._envelope import Envelope
from tokenlean.shorten._report import Kind, Omission

__all__ = [
    "MOST_MISSES",
    "PartShortener",
    "header_length",
    "parts",
    "run_header",
    "shorten_parts",
]

#: A header's lines before its label, at most; and how long each may be.
_HEADER_LINES = 4
_HEADER_CHARS = 100
_LABEL_LINE = re.compile(r"[A-Z][a-z]{1,15}:")
#: A note of the tool's own: ``Warning: truncated output (...)``, ``Total output lines: 237``.
_NOTE = re.compile(r"[A-Z][\w ]{0,40}(?:\([^)\n]{0,60}\))?: [^\n]{0,80}")
_NOTE_BLOCKS = 4
#: A section's label: a name between runs of the same rule characters.
_RULE = r"(?:={3,}|-{3,}|#{3,}|\*{3,}|~{3,}|==>|<<<|<==|>>>)"
_SECTION = re.compile(_RULE + r"[ \t]?[^\n]{1,120}?[ \t]?" + _RULE)
_SECTION_CHARS = 160
#: Lines that open like a JSON value tried in vain, at most: each try may read to the text's end.
MOST_MISSES = 16
_DECODER = json.JSONDecoder()
_OPENS_JSON = re.compile(r'[{\[]\s*(?:["{\[\]}\d-]|true|false|null|$)')
_MOST_PARTS = 200


def header_length(text: str) -> int:
    """The characters of ``text``'s header about the run and the notes after it (0: none)."""
    lines = text[: (_HEADER_LINES + 1) * (_HEADER_CHARS + 1)].split("\n")[: _HEADER_LINES + 2]
    label = next((i for i, line in enumerate(lines[1:-1], 1) if _LABEL_LINE.fullmatch(line)), 0)
    if not label or any(not line.strip() or len(line) > _HEADER_CHARS for line in lines[:label]):
        return 0
    at = sum(len(line) + 1 for line in lines[: label + 1])
    for _ in range(_NOTE_BLOCKS):
        block = _notes(text, at)
        if not block:
            break
        at += block
    return at


def run_header(envelope: Envelope) -> tuple[Envelope, bool]:
    """The envelope with a header about the run (and its notes) moved from the body into its
    head: kept as it is, and not read as the output's kind. Whether there was one: what
    follows it is what a script printed, perhaps in parts."""
    size = header_length(envelope.body)
    if not size:
        return envelope, False
    header, body = envelope.body[:size], envelope.body[size:]
    line = envelope.body_line + header.count("\n")
    return Envelope(envelope.head + header, body, envelope.tail, line), True


def _notes(text: str, at: int) -> int:
    """The characters of a block of notes starting at ``at``: one to three note lines and the
    blank line after them (0: none there)."""
    start = at
    for count in range(4):
        stop = text.find("\n", at, at + 200)
        if stop < 0:
            return 0
        line = text[at:stop]
        if not line.strip():
            return stop + 1 - start if count else 0
        if count == 3 or not _NOTE.fullmatch(line):
            return 0
        at = stop + 1
    return 0


def parts(text: str) -> list[tuple[int, int]] | None:
    """The line ranges ``[first, last)`` of ``text``'s parts, in order and covering every
    line, when it shows at least two: sections under labels, and JSON values each starting a
    line and ending one (the text between them a part of its own); ``None`` otherwise."""
    lines = text.split("\n")
    sections = [i for i, line in enumerate(lines) if _is_section(line)]
    starts = {0, *sections}
    starts.update(i + 1 for i in sections)
    for first, last in _json_lines(text, lines):
        starts.update((first, last))
    ordered = sorted(s for s in starts if s < len(lines))
    if len(ordered) < 2 or len(ordered) > _MOST_PARTS:
        return None
    return list(zip(ordered, [*ordered[1:], len(lines)], strict=True))


def _is_section(line: str) -> bool:
    return len(line) <= _SECTION_CHARS and _SECTION.fullmatch(line.strip()) is not None


def _json_lines(text: str, lines: list[str]) -> list[tuple[int, int]]:
    """The line ranges of JSON values that start a line and end one, tried from the lines
    that open like JSON (``{"``, ``[{``, ``[1``); after :data:`MOST_MISSES` tries that found
    none, no more are tried (a failed decoding may cost the text's length)."""
    found: list[tuple[int, int]] = []
    offset, skip_to, misses = 0, 0, 0
    for i, line in enumerate(lines):
        start, offset = offset, offset + len(line) + 1
        if i < skip_to or not _OPENS_JSON.match(line):
            continue
        if misses >= MOST_MISSES:
            break
        end = _value_end(text, start)
        stop = text.find("\n", end) if end >= 0 else -1
        if end < 0 or text[end : len(text) if stop < 0 else stop].strip():
            misses += 1  # no value, or more follows on its last line: not a part of its own
            continue
        last = text.count("\n", start, end) + i + 1
        found.append((i, last))
        skip_to = last
    return found


def _value_end(text: str, start: int) -> int:
    """Where the JSON value starting at ``start`` ends (-1: none starts there)."""
    try:
        return _DECODER.raw_decode(text, start)[1]
    except (ValueError, RecursionError):
        return -1


#: How one part is shortened: its text, its share of the budget and its first line (0-based,
#: in the whole text) in; its text, kind and omissions out.
PartShortener = Callable[[str, float, int], tuple[str, Kind, list[Omission]]]


def shorten_parts(
    text: str, ranges: list[tuple[int, int]], budget: float, shorten_part: PartShortener
) -> tuple[str, Kind, list[Omission]]:
    """``text`` with each of its parts (line ranges) shortened on its own, within a share of
    ``budget`` as large as its share of the text, and put back in place; the kind is the
    largest part's."""
    lines = text.split("\n")
    total = max(1, len(text))
    out: list[str] = []
    omissions: list[Omission] = []
    kinds: list[tuple[int, Kind]] = []
    for first, last in ranges:
        part = "\n".join(lines[first:last])
        shortened, kind, cut = shorten_part(part, budget * len(part) / total, first)
        out.append(shortened if cut else part)
        omissions.extend(cut)
        kinds.append((len(part), kind))
    return "\n".join(out), max(kinds)[1], omissions
