"""The stuck patterns, each matched on the latest steps: is the agent, right now, repeating
itself instead of making progress? (:mod:`~tokenlean.loop_guard._detect` holds the thresholds.)

Every pattern looks only at the latest steps and compares canonical forms
(:func:`tokenlean.loop_guard._keys.step_key`), so an edit-then-rerun cycle whose output changes is
progress, never a loop. The patterns, with the default
:class:`~tokenlean.loop_guard._detect.LoopDetector` thresholds:

``repeat``
    the same action with the same observation, 3 times in a row.
``failing``
    the same action failing (:func:`tokenlean.loop_guard._keys.is_failure`) 3 times in a row,
    whatever the error text says.
``talking``
    3 replies in a row without any tool call and without a new user message between them, in
    a run that has used tools before: a harness re-prompting with the same text ("continue")
    a model that keeps answering instead of acting. A reply to a new user message is not
    talking in circles (a customer-service agent answers its user turn after turn), and steps
    alone do not say whether a user spoke between two replies: after a reply without tool
    calls control goes back to whoever runs the agent (in LangChain the run ends), and the
    next step only exists because something was sent. So this pattern needs ``since`` (where
    the latest new user request is, :class:`~tokenlean.loop_guard._steps.StepScan`), which
    the loop guard middleware has from the messages; without it (``detect_stuck``,
    ``loop_signals`` as a reference ``signals_fn``) talking is never claimed.
``alternating``
    two different actions taking turns with unchanged observations: A, B, A, B.
``cycle``
    a block of 3 to 16 steps repeated with unchanged observations: A, B, C, A, B, C. An
    assistant turn with several tool calls is as many steps, so this is also one wide turn of
    parallel calls repeated, or two turns taking turns (a turn of 1 call and one of 4: a block
    of 5 steps).

Steps of exempt tools (stepping a debugger, say) are removed before matching: they neither
count towards a pattern nor interrupt one. So are polls (``exempt_polling``, on by default): steps
whose output opens by reporting that the process, cell or job their call asks about, which an
earlier step reported running, is still running (:mod:`~tokenlean.loop_guard._polling`),
whatever the tool is called.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Literal

from tokenlean.loop_guard._keys import StepKeys, is_failure
from tokenlean.loop_guard._step import Step

__all__ = ["PATTERNS", "Detection", "Pattern", "failing", "periodic", "talking"]

Pattern = Literal["repeat", "failing", "talking", "alternating", "cycle"]
PATTERNS: tuple[Pattern, ...] = ("repeat", "failing", "talking", "alternating", "cycle")


@dataclass(frozen=True, slots=True)
class Detection:
    """A stuck pattern found at the end of the steps.

    ``redundant`` counts the latest steps that only repeated earlier ones; ``first_step`` and
    ``last_step`` are the ``step_index`` values where the repetition starts and ends.
    """

    pattern: Pattern
    period: int
    redundant: int
    first_step: int
    last_step: int
    actions: tuple[str, ...]

    def describe(self) -> str:
        tools = ", ".join(a or "(no tool)" for a in self.actions)
        return f"{self.pattern}: {self.redundant} repeated steps of {tools}"


def _run_length(tail: Sequence[Step], same: Callable[[Step], bool]) -> int:
    n = 0
    for step in reversed(tail):
        if not same(step):
            break
        n += 1
    return n


def _detection(
    pattern: Pattern, tail: Sequence[Step], length: int, period: int, redundant: int
) -> Detection:
    window = tail[len(tail) - length :]
    actions = tuple(dict.fromkeys(s["action"] for s in window[:period]))
    return Detection(
        pattern=pattern,
        period=period,
        redundant=redundant,
        first_step=window[0]["step_index"],
        last_step=window[-1]["step_index"],
        actions=actions,
    )


def talking(tail: Sequence[Step]) -> Detection | None:
    length = _run_length(tail, lambda s: not s["action"])
    return _detection("talking", tail, length, 1, length - 1) if length else None


def failing(tail: Sequence[Step], keys: StepKeys) -> Detection | None:
    last = tail[-1]
    if not last["action"] or not is_failure(last):
        return None
    action = keys.action_key(last)  # canonical_action, remembered per step
    length = _run_length(tail, lambda s: keys.action_key(s) == action and is_failure(s))
    return _detection("failing", tail, length, 1, length - 1)


def periodic(
    tail: Sequence[Step], max_period: int, enabled: Collection[Pattern], known: StepKeys
) -> list[Detection]:
    """Trailing repetitions with period 1 (``repeat``), 2 (``alternating``) or more (``cycle``)."""
    steps = tail[len(tail) - _acting(tail) :]
    # The actions of the latest steps, each compared with the newest's: at most periods they
    # differ, which rules the period out without reading an observation.
    reach = min(len(steps), max_period + 1)
    actions = [known.action_key(step) for step in steps[len(steps) - reach :]]
    keys = _Keys(steps, known)
    found: list[Detection] = []
    for period in range(1, reach):
        same = actions[-1 - period] == actions[-1]
        if period > 1 and not same:
            continue  # a cycle counts once it has come round at least once
        pattern: Pattern = "repeat" if period == 1 else "alternating" if period == 2 else "cycle"
        if pattern not in enabled:
            continue
        matched = _run_length_keys(keys, period) if same else 0
        if period > 1 and matched < period:
            continue
        # (checked second: most periods have not come round, and a block of one is minimal)
        if period > 1 and _minimal_period(keys.last(period)) != period:
            continue  # A,A is a repeat, not an alternation
        found.append(_detection(pattern, steps, matched + period, period, matched))
    return found


def _acting(tail: Sequence[Step]) -> int:
    """How many of the latest steps call a tool (read on every call: in a run of tool calls,
    every step of ``tail`` does, which a C-level pass tells)."""
    called = list(map(itemgetter("action"), tail))
    if all(called):
        return len(called)
    return next(i for i, action in enumerate(reversed(called)) if not action)


class _Keys:
    """The steps' keys (from the detector's ``known`` ones), each half worked out when first
    read: the checks read from the end and mostly stop after a few steps, so most keys of a
    long tail are never needed, and a step's observation only matters when its action matches."""

    __slots__ = ("_actions", "_known", "_observations", "_steps")

    def __init__(self, steps: Sequence[Step], known: StepKeys) -> None:
        self._steps = steps
        self._known = known
        self._actions: dict[int, str] = {}
        self._observations: dict[int, str] = {}

    def __len__(self) -> int:
        return len(self._steps)

    def __getitem__(self, index: int) -> tuple[str, str]:
        return self.action(index), self._observation(index)

    def last(self, count: int) -> list[tuple[str, str]]:
        """The keys of the last ``count`` steps, in order."""
        return [self[i] for i in range(len(self) - count, len(self))]

    def same(self, i: int, j: int) -> bool:
        """``self[i] == self[j]``, reading the observations only when the actions match."""
        return self.action(i) == self.action(j) and self._observation(i) == self._observation(j)

    def action(self, index: int) -> str:
        """The first half of the key of step ``index``."""
        key = self._actions.get(index)
        if key is None:
            key = self._actions[index] = self._known.action_key(self._steps[index])
        return key

    def _observation(self, index: int) -> str:
        key = self._observations.get(index)
        if key is None:
            key = self._observations[index] = self._known.observation_key(self._steps[index])
        return key


def _run_length_keys(keys: _Keys, period: int) -> int:
    """How many of the last keys equal the key ``period`` positions earlier."""
    n = 0
    for i in range(len(keys) - 1, period - 1, -1):
        if not keys.same(i, i - period):
            break
        n += 1
    return n


def _minimal_period(block: Sequence[tuple[str, str]]) -> int:
    size = len(block)
    for period in range(1, size):  # the block is always its own period: not checked
        # positions below ``period`` are compared with themselves: skipped
        if size % period == 0 and all(block[i] == block[i % period] for i in range(period, size)):
            return period
    return size
