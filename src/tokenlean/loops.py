"""Agent steps: each assistant action paired with what it observed.

A *step* is the dict a ``signals_fn`` receives (the reference ``TokenSavingMiddleware`` format):
``step_index``, ``action`` (tool name or ``""``), ``action_input`` (arguments or ``{}``),
``thought`` (the assistant text), ``observation`` (the matched tool result or ``""``) and
``is_error``. An assistant turn with several tool calls gives one step per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

from tokenlean.transcript import Message


class Step(TypedDict):
    step_index: int
    action: str
    action_input: dict[str, Any]
    thought: str
    observation: str
    is_error: bool


def build_steps(messages: Sequence[Message]) -> list[Step]:
    """Steps from a neutral transcript, pairing tool calls with results by ``tool_call_id``."""
    results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
    steps: list[Step] = []
    for message in messages:
        if message.role != "assistant":
            continue
        calls = message.tool_calls or (None,)
        for call in calls:
            result = results.get(call.id) if call is not None else None
            steps.append(
                Step(
                    step_index=len(steps),
                    action=call.name if call is not None else "",
                    action_input=dict(call.args) if call is not None else {},
                    thought=message.text,
                    observation=result.text if result is not None else "",
                    is_error=result is not None and result.status == "error",
                )
            )
    return steps
