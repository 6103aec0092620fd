"""Agent steps: built from a transcript, and carried from call to call.

A *step* is the dict a ``signals_fn`` receives (the reference ``TokenSavingMiddleware`` format):
``step_index``, ``action`` (tool name or ``""``), ``action_input`` (arguments or ``{}``),
``thought`` (the assistant text), ``observation`` (the matched tool result or ``""``) and
``is_error``. An assistant turn with several tool calls gives one step per call.
:mod:`tokenlean.loop_guard._keys` holds the canonical forms loop detection compares steps by,
and whether a step failed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from tokenlean import checks
from tokenlean.loop_guard._canonical import canonical_text
from tokenlean.loop_guard._step import Step
from tokenlean.transcript import Message, checked_messages, is_injected

__all__ = ["StepList", "StepScan", "build_steps"]


def build_steps(messages: Sequence[Message], *, first_index: int = 0) -> list[Step]:
    """Steps from a neutral transcript, pairing tool calls with results by ``tool_call_id``.

    ``first_index`` is the ``step_index`` of the first step (for steps that continue others).
    """
    # Checked on every model call: messages made by the adapter are told by their type alone.
    if type(messages) is not list or not all(type(m) is Message for m in messages):
        checked_messages(messages)
    if type(first_index) is not int or first_index < 0:
        checks.integer(first_index, "first_index", at_least=0)  # refuses it
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
                    step_index=first_index + len(steps),
                    action=call.name if call is not None else "",
                    action_input=dict(call.args) if call is not None else {},
                    thought=message.text,
                    observation=result.text if result is not None else "",
                    is_error=result is not None and result.status == "error",
                )
            )
    return steps


class StepList(Sequence[Step]):
    """The first ``n`` steps of an append-only list shared by successive scans, then a tail.

    It holds steps made by :func:`build_steps` only (a detector does not check them again).

    A scan continued over new messages appends them to the list it was built on when nothing
    was appended past its own end (the common case: each call continues the previous one), so
    continuing a scan costs what is new instead of a copy of every step so far. The steps a
    ``StepList`` shows never change: later appends lie past its end.
    """

    __slots__ = ("_base", "_n", "_tail")

    def __init__(self, base: list[Step], n: int, tail: tuple[Step, ...] = ()) -> None:
        self._base, self._n, self._tail = base, n, tail

    def __len__(self) -> int:
        return self._n + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> Step: ...

    @overload
    def __getitem__(self, index: slice) -> list[Step]: ...

    def __getitem__(self, index: int | slice) -> Step | list[Step]:
        if isinstance(index, slice):
            start, stop, stride = index.indices(len(self))
            if stride != 1:
                return [self[i] for i in range(start, stop, stride)]
            # Two C-level slices: a detector reads the latest steps on every call.
            head = self._base[start : min(stop, self._n)] if start < self._n else []
            if stop > self._n:
                head.extend(self._tail[max(0, start - self._n) : stop - self._n])
            return head
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("step index out of range")
        return self._base[index] if index < self._n else self._tail[index - self._n]

    def __iter__(self) -> Iterator[Step]:
        yield from itertools.islice(self._base, self._n)
        yield from self._tail

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"StepList({list(self)!r})"

    def then(self, steps: Sequence[Step], *, settled: bool) -> StepList:
        """These steps followed by ``steps``: appended to the shared list when ``settled`` and
        nothing lies past this view's end, else held as this view's own tail."""
        if not steps:
            return self
        if settled and not self._tail and len(self._base) == self._n:
            self._base.extend(steps)
            return StepList(self._base, len(self._base))
        if settled:  # another scan continued the shared list: start a list of our own
            base = [*self, *steps]
            return StepList(base, len(base))
        return StepList(self._base, self._n, (*self._tail, *steps))


@dataclass(frozen=True, slots=True)
class StepScan:
    """The steps of a transcript read so far, and where its latest *new* user request starts.

    ``since`` counts the steps before the latest user request whose text differs from the one
    before it: a harness repeating the same prompt ("continue") is not a new request, so a loop
    across such prompts is still seen, while a user asking something else starts afresh. A
    message tokenlean injected (:func:`~tokenlean.transcript.is_injected`) is never a request.
    It is what :meth:`LoopDetector.detect <tokenlean.loop_guard._detect.LoopDetector.detect>`
    needs to tell a model talking in circles from one answering its user turn after turn.
    """

    steps: Sequence[Step] = ()
    since: int = 0
    request: str | None = None
    turns: int = 0  # assistant messages (model calls answered)

    def extend(self, messages: Sequence[Message], *, settled: bool = True) -> StepScan:
        """This scan continued over ``messages`` (which hold the results of their own calls).

        The work is proportional to ``messages`` alone. ``settled=False`` says the messages may
        still change (the newest turn, whose results are not all in): such a scan is read,
        never continued, so its steps are kept apart from the list later scans share.
        """
        steps = build_steps(messages, first_index=len(self.steps))
        since, request, count = self.since, self.request, len(self.steps)
        turns = self.turns
        for message in messages:
            if message.role == "assistant":
                count += max(1, len(message.tool_calls))
                turns += 1
            elif message.role == "user" and not is_injected(message.id):
                text = canonical_text(message.text)
                if text != request:
                    since, request = count, text
        return StepScan(_steps_of(self.steps).then(steps, settled=settled), since, request, turns)

    def settle(self, read: StepScan) -> StepScan:
        """``read``, this scan continued with ``settled=False``, as if continued with
        ``settled=True``: the same steps (the very objects), now shared with later scans.

        For a turn read while its results were coming in and found complete on a later call:
        equal to continuing this scan over the same messages again, without building them.
        """
        steps = read.steps[len(self.steps) :]
        shared = _steps_of(self.steps).then(steps, settled=True)
        return StepScan(shared, read.since, read.request, read.turns)


def _steps_of(steps: Sequence[Step]) -> StepList:
    return steps if isinstance(steps, StepList) else StepList(list(steps), len(steps))
