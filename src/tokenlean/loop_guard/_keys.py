"""What two steps are compared by, and whether a step failed.

Two steps are "the same" for loop detection when their canonical forms are equal:
:func:`~tokenlean.loop_guard._canonical.canonical_text` removes what changes between two runs of
the very same command (whitespace, timestamps and durations, process ids, hex ids and addresses,
random temp-file names), :func:`canonical_action` also sorts argument keys; a detector remembers
them per step object (:class:`StepKeys`). :func:`is_failure` says whether a step failed, from its
error status or from the exit code or error line its output opens with.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from tokenlean.loop_guard._canonical import canonical_text
from tokenlean.loop_guard._polling import Report, running_report
from tokenlean.loop_guard._step import Step

__all__ = ["StepKeys", "canonical_action", "is_failure", "step_key"]


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
