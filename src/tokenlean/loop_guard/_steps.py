"""Agent steps, and the canonical forms loop detection compares them by.

A *step* is the dict a ``signals_fn`` receives (the reference ``TokenSavingMiddleware`` format):
``step_index``, ``action`` (tool name or ``""``), ``action_input`` (arguments or ``{}``),
``thought`` (the assistant text), ``observation`` (the matched tool result or ``""``) and
``is_error``. An assistant turn with several tool calls gives one step per call.

Two steps are "the same" for loop detection when their canonical forms are equal:
:func:`~tokenlean.loop_guard._canonical.canonical_text` removes what changes between two runs of
the very same command (whitespace, timestamps and durations, process ids, hex ids and addresses,
random temp-file names), :func:`canonical_action` also sorts argument keys. :func:`is_failure`
says whether a step failed, from its error status or from the exit code or error line its output
opens with.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import overload

from tokenlean import checks
from tokenlean.loop_guard._canonical import CANONICAL_SPAN as CANONICAL_SPAN  # re-exported
from tokenlean.loop_guard._canonical import canonical_text as canonical_text  # re-exported
from tokenlean.loop_guard._polling import Report, running_report
from tokenlean.loop_guard._step import Step
from tokenlean.transcript import Message, checked_messages, is_injected


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


def _canonical_value(value: object) -> object:
    if isinstance(value, str):
        return canonical_text(value)
    if isinstance(value, Mapping):
        return {str(key): _canonical_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical_value(item) for item in value]
    return value


# ``json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)``, its encoder made once
_ACTION_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)


def canonical_action(step: Step) -> str:
    """The tool name and its arguments, keys sorted and string values canonicalised."""
    body = _ACTION_JSON.encode(_canonical_value(step["action_input"]))
    return f"{step['action']}{body}"


def step_key(step: Step) -> tuple[str, str]:
    """What must match for two steps to be the same: canonical action and observation.

    Worked out afresh on each call; a detector, which looks at the same latest steps on every
    call, remembers them per step object (:class:`StepKeys`).
    """
    return canonical_action(step), canonical_text(step["observation"])


@dataclass(slots=True)
class _StepKeys:
    """A step's keys, and the parts of the step they were worked out from."""

    step: Step  # held, so that its id is not reused while the keys are remembered
    action: str
    action_input: object
    observation: str
    action_key: str | None = None  # each key worked out when first asked for
    observation_key: str | None = None
    running: Report | None = None  # what the step reports still running, once ``polled``
    polled: bool = False


class StepKeys:
    """:func:`step_key` remembered per step object, for the detector that owns it.

    A detector looks at the same latest steps on every call (the steps a scan built stay the
    same objects from call to call), so each step's keys are worked out once, and again only if
    its action, input or observation was replaced since. At most ``max_keys`` steps are
    remembered, the oldest forgotten first. Reads take no lock (a dict lookup is atomic); writes
    hold it, so the threads sharing a detector share its keys.
    """

    __slots__ = ("_keys", "_lock", "_max")

    def __init__(self, *, max_keys: int = 4096) -> None:
        self._keys: OrderedDict[int, _StepKeys] = OrderedDict()
        self._lock = threading.Lock()
        self._max = max_keys

    def __reduce__(self) -> tuple[type[StepKeys], tuple[()]]:
        return StepKeys, ()  # a copy (of a detector, say) starts empty: the lock is not copied

    def key(self, step: Step) -> tuple[str, str]:
        """:func:`step_key` of ``step``."""
        return self.action_key(step), self.observation_key(step)

    def action_key(self, step: Step) -> str:
        """The first half of :func:`step_key`: two steps whose actions differ differ, whatever
        they observed, so the observation need not be read."""
        keys = self._of(step)
        if keys.action_key is None:
            keys.action_key = canonical_action(step)
        return keys.action_key

    def observation_key(self, step: Step) -> str:
        """The second half of :func:`step_key`: the canonical observation, worked out only when
        first asked for (an output can be long)."""
        keys = self._of(step)
        if keys.observation_key is None:
            keys.observation_key = canonical_text(step["observation"])
        return keys.observation_key

    def running(self, step: Step) -> Report | None:
        """What ``step`` reports still running, worked out when first asked for (see
        :func:`~tokenlean.loop_guard._polling.running_report`)."""
        keys = self._of(step)
        if not keys.polled:
            keys.running, keys.polled = running_report(step, self.action_key), True
        return keys.running

    def _of(self, step: Step) -> _StepKeys:
        """The step's remembered keys, worked out again if its action, input or observation was
        replaced since."""
        # Read without the lock (a dict lookup is atomic; writes hold it): a detector reads the
        # keys of the latest steps on every call.
        keys = self._keys.get(id(step))
        if (
            keys is not None
            and keys.step is step
            and keys.action_input is step["action_input"]
            and keys.action == step["action"]
            and keys.observation == step["observation"]
        ):
            return keys
        keys = _StepKeys(step, step["action"], step["action_input"], step["observation"])
        with self._lock:
            self._keys[id(step)] = keys
            if len(self._keys) > self._max:
                self._keys.popitem(last=False)
        return keys


_EXIT_CODE = re.compile(
    r"<returncode>\s*(-?\d+)\s*</returncode>|\bexit (?:code|status)[: ]\s*(-?\d+)", re.I
)
_ERROR_OPENING = re.compile(
    r"^(?:error\b|[\w.]*(?:error|exception)\b:|traceback \(most recent call last\)|fatal:"
    r"|.*: command not found|.*: no such file or directory)",
    re.I,
)
_LEADING_SPACE = re.compile(r"\s*")
#: A line up to the first boundary ``str.splitlines`` knows (all of them are whitespace).
_LINE = re.compile(r"[^\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]*")


def is_failure(step: Step) -> bool:
    """True when the step failed: error status, a non-zero exit code, or an error first line.

    Only the exit code and the first non-empty line of the output count, so a successful
    command that prints a log containing the word "Error" is not a failure.
    """
    if step["is_error"]:
        return True
    observation = step["observation"]
    code = _EXIT_CODE.search(observation[:400])
    if code is not None:
        return int(code.group(1) or code.group(2)) != 0
    # The first non-blank line, without splitting the whole output into lines.
    start = _LEADING_SPACE.match(observation).end()  # type: ignore[union-attr]  # matches ""
    first = _LINE.match(observation, start).group().strip()  # type: ignore[union-attr]
    return bool(_ERROR_OPENING.match(first))
