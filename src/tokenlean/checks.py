"""Argument checks shared by every public constructor and function.

Each check names the parameter and says what it accepts. A value of the wrong kind raises
:class:`ArgumentTypeError`, which is both a ``TypeError`` (what Python raises for a wrong type)
and a ``ValueError`` (what tokenlean has always raised for bad configuration), so callers may
catch either; a value of the right kind but out of range raises ``ValueError``. Checks run
once, at construction or on entry, never per token: bad input is refused before an agent runs,
not logged on every call.

This module imports nothing of tokenlean, so every module may use it,
:mod:`tokenlean.transcript` included (which checks a sequence of its messages itself:
:func:`~tokenlean.transcript.checked_messages`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "ArgumentTypeError",
    "collection_of_names",
    "described",
    "flag",
    "function",
    "identifier",
    "instance",
    "integer",
    "number",
    "one_of",
    "optional_text",
    "provides",
    "sequence",
    "text",
    "token_counter",
    "tool_choice",
]


T = TypeVar("T")
N = TypeVar("N", int, float)


class ArgumentTypeError(TypeError, ValueError):
    """An argument of the wrong kind (catch it as ``TypeError`` or as ``ValueError``)."""


def described(value: object) -> str:
    """``value`` as an error message shows it: a short repr and, when it helps, its type."""
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    if value is None or isinstance(value, (bool, int, float, str)):
        return shown
    return f"{shown} ({type(value).__name__})"


def _bounds(
    at_least: float | None, at_most: float | None, above: float | None, below: float | None
) -> str:
    parts = [
        f">= {at_least:g}" if at_least is not None else "",
        f"> {above:g}" if above is not None else "",
        f"<= {at_most:g}" if at_most is not None else "",
        f"< {below:g}" if below is not None else "",
    ]
    return " and ".join(p for p in parts if p)


def _wanted(
    kind: str,
    at_least: float | None,
    at_most: float | None,
    above: float | None,
    below: float | None,
) -> str:
    """What a check wanted, for its error message: ``kind`` and its bounds."""
    return " ".join(p for p in (kind, _bounds(at_least, at_most, above, below)) if p)


def integer(
    value: object,
    name: str,
    *,
    at_least: int | None = None,
    at_most: int | None = None,
    wanted: str | None = None,
) -> int:
    """``value`` if it is an int (not a bool) within the bounds; ``wanted`` words what is
    accepted for the error message where the bounds alone say it less well ("a positive int")."""
    bounds = _Bounds("an int", at_least, at_most, None, None, wanted)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"{name} must be {bounds.wanted()}, got {described(value)}")
    return bounds.check(value, value, name)


def number(
    value: object,
    name: str,
    *,
    at_least: float | None = None,
    at_most: float | None = None,
    above: float | None = None,
    below: float | None = None,
    wanted: str | None = None,
) -> float:
    """``value`` as a float if it is a finite int or float (not a bool) within the bounds;
    ``wanted`` words what is accepted for the error message (as for :func:`integer`)."""
    bounds = _Bounds("a finite number", at_least, at_most, above, below, wanted)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ArgumentTypeError(f"{name} must be {bounds.wanted()}, got {described(value)}")
    return bounds.check(float(value), value, name)


@dataclass(frozen=True, slots=True)
class _Bounds:
    """The bounds of :func:`integer` and :func:`number`, and what their errors say is wanted."""

    kind: str
    at_least: float | None
    at_most: float | None
    above: float | None
    below: float | None
    words: str | None

    def wanted(self) -> str:
        return self.words or _wanted(self.kind, self.at_least, self.at_most, self.above, self.below)

    def check(self, x: N, given: object, name: str) -> N:
        """``x`` (``given`` as converted) if it is finite and within the bounds."""
        if (
            (isinstance(x, float) and not math.isfinite(x))
            or (self.at_least is not None and x < self.at_least)
            or (self.at_most is not None and x > self.at_most)
            or (self.above is not None and x <= self.above)
            or (self.below is not None and x >= self.below)
        ):
            raise ValueError(f"{name} must be {self.wanted()}, got {given!r}")
        return x


def one_of(value: T, name: str, choices: Collection[object]) -> T:
    """``value`` if it is one of ``choices`` (the error message shows them as given: a tuple, a
    sorted list)."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def provides(value: T, name: str, methods: Iterable[str], wanted: str) -> T:
    """``value`` if each of ``methods`` (dotted paths such as ``"messages.create"``) names
    something callable on it: an SDK client, told by what it offers rather than by its class
    (``wanted`` names it for the error message, which shows the class given)."""
    for path in methods:
        target: object = value
        for part in path.split("."):
            target = getattr(target, part, None)
        if not callable(target):
            raise ArgumentTypeError(f"{name} must be {wanted}, got {type(value).__name__}")
    return value


def instance(value: object, name: str, kind: type[T] | tuple[type[T], ...], wanted: str) -> T:
    """``value`` if it is a ``kind`` (``wanted`` names it for the error message: "a
    ShortenSettings")."""
    if not isinstance(value, kind):
        raise ArgumentTypeError(f"{name} must be {wanted}, got {described(value)}")
    return value


def flag(value: object, name: str) -> bool:
    """``value`` if it is ``True`` or ``False`` (a truthy string is refused, not guessed at)."""
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be True or False, got {described(value)}")
    return value


def text(value: object, name: str, *, blank: bool = True) -> str:
    """``value`` if it is a string (not blank, unless ``blank``)."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{name} must be a string, got {described(value)}")
    if not blank and not value.strip():
        raise ValueError(f"{name} must be a non-blank string, got {value!r}")
    return value


def identifier(value: object, name: str) -> str:
    """``value`` if it is a string that is a valid tool name (a Python identifier)."""
    if not isinstance(value, str):
        raise ArgumentTypeError(
            f"{name} must be an identifier string such as 'read_original', got {described(value)}"
        )
    if not value.isidentifier():
        raise ValueError(f"{name} must be an identifier string, got {value!r}")
    return value


def optional_text(value: object, name: str) -> str | None:
    """``value`` if it is ``None`` or a string."""
    return None if value is None else text(value, name)


def collection_of_names(value: object, name: str) -> frozenset[str]:
    """``value`` as a set of names: a collection of strings, never a bare string (whose
    characters would silently become the names)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ArgumentTypeError(
            f"{name} must be a collection of names such as ['bash'] (not a bare string), "
            f"got {described(value)}"
        )
    items = list(value)
    odd = [item for item in items if not isinstance(item, str)]
    if odd:
        raise ArgumentTypeError(f"{name} must hold strings only, got {described(odd[0])}")
    return frozenset(items)


def sequence(value: object, name: str, *, of: str) -> Sequence[Any]:
    """``value`` if it is a list or tuple-like sequence (not a string nor a mapping) of ``of``."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise ArgumentTypeError(f"{name} must be a sequence of {of}, got {described(value)}")
    return value


def function(value: object, name: str, *, wanted: str = "callable") -> Callable[..., Any]:
    """``value`` if it can be called (``wanted``: what the error message says is accepted, where
    a string is too: "a string or a callable")."""
    if not callable(value):
        raise ArgumentTypeError(f"{name} must be {wanted}, got {described(value)}")
    return value


def tool_choice(value: object, name: str) -> str | dict[str, Any] | None:
    """``value`` if it is ``None``, a ``tool_choice`` string or a ``tool_choice`` mapping."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    raise ArgumentTypeError(
        f"{name} must be None, a string such as 'none' or a mapping such as "
        f"{{'type': 'none'}}, got {described(value)}"
    )


def token_counter(value: T, name: str) -> T:
    """``value`` if it fits the :class:`~tokenlean.tokens.TokenCounter` protocol (a callable
    ``count(text) -> int``), refused up front instead of failing on every call."""
    if not callable(getattr(value, "count", None)) or isinstance(value, (str, bytes, Collection)):
        raise ArgumentTypeError(
            f"{name} must be a TokenCounter with a count(text) -> int method "
            f"(e.g. EstimateCounter()), got {described(value)}"
        )
    return value
