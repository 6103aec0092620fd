"""The argument checks of :mod:`tokenlean.checks` that need no tokenlean type.

They import nothing of tokenlean, so every module may use them, :mod:`tokenlean.transcript`
included (whose dataclasses the checks of messages need): importing them from here is what keeps
``checks`` and ``transcript`` out of a circle. Everywhere else, import :mod:`tokenlean.checks`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "ArgumentTypeError",
    "collection_of_names",
    "described",
    "flag",
    "function",
    "identifier",
    "integer",
    "number",
    "optional_text",
    "sequence",
    "text",
    "tool_choice",
]


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
    value: object, name: str, *, at_least: int | None = None, at_most: int | None = None
) -> int:
    """``value`` if it is an int (not a bool) within the bounds."""
    if isinstance(value, bool) or not isinstance(value, int):
        wanted = _wanted("an int", at_least, at_most, None, None)
        raise ArgumentTypeError(f"{name} must be {wanted}, got {described(value)}")
    if (at_least is not None and value < at_least) or (at_most is not None and value > at_most):
        raise ValueError(
            f"{name} must be {_wanted('an int', at_least, at_most, None, None)}, got {value!r}"
        )
    return value


def number(
    value: object,
    name: str,
    *,
    at_least: float | None = None,
    at_most: float | None = None,
    above: float | None = None,
    below: float | None = None,
) -> float:
    """``value`` as a float if it is a finite int or float (not a bool) within the bounds."""
    wanted = "a finite number"  # with its bounds, worked out only for an error message
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        wanted = _wanted(wanted, at_least, at_most, above, below)
        raise ArgumentTypeError(f"{name} must be {wanted}, got {described(value)}")
    x = float(value)
    if (
        not math.isfinite(x)
        or (at_least is not None and x < at_least)
        or (at_most is not None and x > at_most)
        or (above is not None and x <= above)
        or (below is not None and x >= below)
    ):
        wanted = _wanted(wanted, at_least, at_most, above, below)
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    return x


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


def function(value: object, name: str) -> Callable[..., Any]:
    """``value`` if it can be called."""
    if not callable(value):
        raise ArgumentTypeError(f"{name} must be callable, got {described(value)}")
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
