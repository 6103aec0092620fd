"""Argument checks shared by every public constructor and function.

Each check names the parameter and says what it accepts. A value of the wrong kind raises
:class:`ArgumentTypeError`, which is both a ``TypeError`` (what Python raises for a wrong type)
and a ``ValueError`` (what tokenlean has always raised for bad configuration), so callers may
catch either; a value of the right kind but out of range raises ``ValueError``. Checks run
once, at construction or on entry, never per token: bad input is refused before an agent runs,
not logged on every call.

The checks that need no tokenlean type live in :mod:`tokenlean._checks` (the transcript's own
dataclasses use them); this module adds those of tokenlean's types (messages, token counters).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TypeVar, cast

from tokenlean._checks import (
    ArgumentTypeError,
    collection_of_names,
    described,
    flag,
    function,
    identifier,
    integer,
    number,
    optional_text,
    sequence,
    text,
    tool_choice,
)
from tokenlean.transcript import Message

__all__ = [
    "ArgumentTypeError",
    "collection_of_names",
    "described",
    "flag",
    "function",
    "identifier",
    "integer",
    "messages",
    "number",
    "optional_text",
    "sequence",
    "text",
    "token_counter",
    "tool_choice",
]


T = TypeVar("T")


def messages(value: object, name: str = "messages") -> Sequence[Message]:
    """``value`` if it is a sequence of tokenlean :class:`~tokenlean.transcript.Message`."""
    items = sequence(value, name, of="tokenlean Messages")
    for index, item in enumerate(items):
        if not isinstance(item, Message):
            raise ArgumentTypeError(
                f"{name}[{index}] must be a tokenlean Message (see tokenlean.langchain.to_view), "
                f"got {described(item)}"
            )
    return cast("Sequence[Message]", items)


def token_counter(value: T, name: str) -> T:
    """``value`` if it fits the :class:`~tokenlean.tokens.TokenCounter` protocol (a callable
    ``count(text) -> int``), refused up front instead of failing on every call."""
    if not callable(getattr(value, "count", None)) or isinstance(value, (str, bytes, Collection)):
        raise ArgumentTypeError(
            f"{name} must be a TokenCounter with a count(text) -> int method "
            f"(e.g. EstimateCounter()), got {described(value)}"
        )
    return value
