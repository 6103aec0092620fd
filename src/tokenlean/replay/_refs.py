"""References: the identifiers, paths and numbers an agent learns from tool output and reuses.

Reference recall asks whether what the agent went on to write was still visible when it wrote it.
A *reference* is a token of one of these kinds, extracted the same way from every text:

- a path (contains ``/``), e.g. ``django/db/models/query.py`` or ``/tmp/x.log``;
- a dotted name, e.g. ``models.py`` or ``QuerySet.filter``;
- a code-like identifier of 3+ characters holding ``_``, a digit, or an inner capital,
  e.g. ``get_order_by``, ``SQLCompiler``, ``py39``;
- a number of two or more digits, e.g. a line number ``1234`` or ``3.14``.

Plain words are not references: they carry no evidence of having been read from the output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from tokenlean.transcript import Message

__all__ = [
    "TurnReferences",
    "extract_refs",
    "first_appearances",
    "learned_references",
    "message_refs",
]

# One linear scan: chunks of word characters joined by . / - (no nested quantifiers).
_CHUNK = re.compile(r"[\w][\w./-]*")
_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)*")
_MAX_CHUNK = 200


def _code_like(word: str) -> bool:
    if len(word) < 3:
        return False
    if "_" in word.strip("_") or any(ch.isdigit() for ch in word):
        return True
    return any(ch.isupper() for ch in word[1:]) and any(ch.islower() for ch in word)


def extract_refs(text: str) -> frozenset[str]:
    """All references in ``text`` (see the module docstring for what counts)."""
    found: set[str] = set()
    for match in _CHUNK.finditer(text):
        chunk = match.group().rstrip("./-")
        if len(chunk) > _MAX_CHUNK:
            chunk = chunk[:_MAX_CHUNK]
        is_path = "/" in chunk and len(chunk) >= 4
        is_dotted = "." in chunk and not chunk[0].isdigit() and any(c.isalpha() for c in chunk)
        if is_path or is_dotted:
            found.add(chunk)
        for part in _PART.findall(chunk):
            if part[0].isdigit():
                if len(part.replace(".", "")) >= 2:
                    found.add(part)
            elif _code_like(part):
                found.add(part)
    return frozenset(found)


def message_refs(message: Message) -> frozenset[str]:
    """References in a message's text and in its tool calls' arguments."""
    refs = extract_refs(message.text)
    for call in message.tool_calls:
        refs |= extract_refs(json.dumps(call.args, ensure_ascii=False, default=str))
    return refs


@dataclass(frozen=True, slots=True)
class TurnReferences:
    """The learned references an assistant turn used."""

    message_index: int
    refs: frozenset[str]


def first_appearances(per_message: Sequence[frozenset[str]]) -> dict[str, int]:
    """The index of the message where each reference first appears (``per_message[i]`` holds
    the references of message ``i``, as :func:`message_refs` gives them)."""
    first_seen: dict[str, int] = {}
    for index, refs in enumerate(per_message):
        for ref in refs:
            first_seen.setdefault(ref, index)
    return first_seen


def learned_references(messages: Sequence[Message]) -> list[TurnReferences]:
    """For each assistant turn, the references it wrote that it had learned from a tool output.

    A reference is learned when its first appearance in the transcript is in a tool message that
    comes before the turn (so it was absent from every message before that output).
    """
    per_message = [message_refs(m) for m in messages]
    first_seen = first_appearances(per_message)
    turns: list[TurnReferences] = []
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        learned = frozenset(
            ref
            for ref in per_message[index]
            if first_seen[ref] < index and messages[first_seen[ref]].role == "tool"
        )
        turns.append(TurnReferences(index, learned))
    return turns
