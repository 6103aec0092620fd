"""How a recorded run is cut into what a scripted agent replays (framework-free).

A run is a system prompt and a list of *segments*: the user (or mid-run system) messages that
open one ``invoke``/``reply``, and the assistant turns that answer them. Every replay driver
(LangChain's in :mod:`tokenlean.replay`, AgentScope's in :mod:`tokenlean.replay.agentscope`)
cuts a run the same way, so their calls line up one for one.
"""

from __future__ import annotations

from collections.abc import MutableSequence, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from tokenlean.transcript import Message

__all__ = ["Queued", "Segment", "arg_types", "split_segments"]

Reply = TypeVar("Reply")


class Queued(Generic[Reply]):
    """What every scripted model shares: the replies it will give, in order, fed one user
    turn's worth at a time by the replay driver (the model keeps them in :meth:`_replies`)."""

    def _replies(self) -> MutableSequence[Reply]:
        raise NotImplementedError

    def push(self, *replies: Reply) -> None:
        """Queue more replies."""
        self._replies().extend(replies)

    @property
    def pending(self) -> int:
        return len(self._replies())

    def clear_pending(self) -> int:
        """Drop the replies left (returns how many were dropped)."""
        queued = self._replies()
        dropped = len(queued)
        queued.clear()
        return dropped


@dataclass
class Segment:
    """One user turn: the messages that open it and the assistant turns that answer it."""

    inputs: list[Message] = field(default_factory=list)
    turns: list[Message] = field(default_factory=list)


def split_segments(messages: Sequence[Message]) -> tuple[str | None, list[Segment]]:
    """The system prompt and the user turns of a trajectory (tool results are left to tools)."""
    system: str | None = None
    rest = list(messages)
    if rest and rest[0].role == "system":
        system = rest.pop(0).text
    segments: list[Segment] = [Segment()]
    for message in rest:
        if message.role == "assistant":
            segments[-1].turns.append(message)
        elif message.role in ("user", "system"):
            if segments[-1].turns:
                segments.append(Segment())
            segments[-1].inputs.append(message)
    return system, [s for s in segments if s.inputs or s.turns]


def arg_types(messages: Sequence[Message]) -> dict[str, dict[str, set[type]]]:
    """For each tool called, the argument names its calls use (those a tool schema can hold:
    identifiers, not private, not ``tool_call_id``) and the types of their values."""
    out: dict[str, dict[str, set[type]]] = {}
    for message in messages:
        for call in message.tool_calls:
            keys = out.setdefault(call.name, {})
            for key, value in call.args.items():
                if key.isidentifier() and not key.startswith("_") and key != "tool_call_id":
                    keys.setdefault(key, set()).add(type(value))
    return out
