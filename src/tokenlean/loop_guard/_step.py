"""One step of an agent: a tool call with its result, or a turn of text with no call.

It is the dict a ``signals_fn`` receives (the reference ``TokenSavingMiddleware`` format):
``step_index``, ``action`` (tool name or ``""``), ``action_input`` (arguments or ``{}``),
``thought`` (the assistant text), ``observation`` (the matched tool result or ``""``) and
``is_error``.
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["Step"]


class Step(TypedDict):
    step_index: int
    action: str
    action_input: dict[str, Any]
    thought: str
    observation: str
    is_error: bool
