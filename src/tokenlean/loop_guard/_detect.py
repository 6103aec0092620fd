"""The loop detector: thresholds and exemptions over the stuck patterns
(:mod:`~tokenlean.loop_guard._patterns` says what each pattern is), the loop signals, and the
default detector of :func:`detect_stuck` and :func:`loop_signals`."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from tokenlean import checks
from tokenlean.loop_guard._canonical import canonical_text
from tokenlean.loop_guard._keys import StepKeys
from tokenlean.loop_guard._patterns import PATTERNS, Detection, Pattern, failing, periodic, talking
from tokenlean.loop_guard._polling import POLL_LOOKBACK, polls
from tokenlean.loop_guard._signals import diversity_loss, hedge_score, streak_score
from tokenlean.loop_guard._step import Step
from tokenlean.loop_guard._steps import StepList

__all__ = [
    "DEFAULT_DETECTOR",
    "PATTERNS",
    "Detection",
    "LoopDetector",
    "Pattern",
    "detect_stuck",
    "loop_signals",
]


@dataclass(frozen=True, kw_only=True)
class LoopDetector:
    """Stuck-pattern thresholds and exemptions; :meth:`detect` and :meth:`signals` use them.

    ``repeat_after``, ``failing_after`` and ``talking_after`` count steps in a row;
    ``cycle_repeats`` counts full rounds of an alternation or cycle (periods 2 to
    ``max_period``). ``exempt_tools`` names tools that legitimately repeat; ``exempt_if`` is a
    predicate for finer exemptions (for example a ``bash`` step whose command is ``sleep``);
    ``exempt_polling`` leaves out polls of a process still running, whatever the tool
    (:mod:`~tokenlean.loop_guard._polling`).
    ``patterns`` lists the enabled patterns. ``signal_window`` and ``hedge_window`` size the
    ``diversity`` and ``hedge`` signals. A detector remembers the keys of the steps it has read
    (:class:`~tokenlean.loop_guard._keys.StepKeys`): it is asked about the same latest steps on
    every call.
    """

    repeat_after: int = 3
    failing_after: int = 3
    talking_after: int = 3
    cycle_repeats: int = 2
    max_period: int = 16  # a block of steps: one or two turns of parallel tool calls
    exempt_tools: Collection[str] = frozenset()
    exempt_if: Callable[[Step], bool] | None = None
    exempt_polling: bool = True
    patterns: Collection[Pattern] = PATTERNS
    signal_window: int = 6
    hedge_window: int = 5
    _horizon: int = field(init=False, repr=False, compare=False, default=0)
    _keys: StepKeys = field(init=False, repr=False, compare=False, default_factory=StepKeys)

    def __post_init__(self) -> None:
        for name in ("repeat_after", "failing_after", "talking_after", "cycle_repeats"):
            checks.integer(getattr(self, name), name, at_least=2)
        checks.integer(self.max_period, "max_period", at_least=1)
        checks.integer(self.signal_window, "signal_window", at_least=2)
        checks.integer(self.hedge_window, "hedge_window", at_least=1)
        unknown = checks.collection_of_names(self.patterns, "patterns") - set(PATTERNS)
        if unknown:
            raise ValueError(f"unknown patterns {sorted(unknown)}; known: {list(PATTERNS)}")
        exempt = checks.collection_of_names(self.exempt_tools, "exempt_tools")
        if self.exempt_if is not None:
            checks.function(self.exempt_if, "exempt_if")
        checks.flag(self.exempt_polling, "exempt_polling")
        object.__setattr__(self, "exempt_tools", exempt)
        object.__setattr__(self, "patterns", tuple(p for p in PATTERNS if p in self.patterns))
        longest = max(self.repeat_after, self.failing_after, self.talking_after)
        horizon = max(longest, self.max_period * self.cycle_repeats, self.signal_window)
        object.__setattr__(self, "_horizon", 2 * horizon)  # room for a run twice the longest

    def active(self, steps: Sequence[Step], *, start: int = 0) -> list[Step]:
        """The latest non-exempt steps from position ``start`` on, enough for every pattern.

        Read from the end (no slice of the history is copied), so a long run costs no more to
        check than a short one.
        """
        _check_sequence(steps)
        kept: list[Step] = []
        start, end = max(0, start), len(steps)
        sliced = isinstance(steps, (list, tuple, StepList))  # slices that copy in C
        # Read back in slices just long enough to fill the horizon (more only when steps are
        # exempt), so exactly the steps the check needs are read, and each only once.
        while end > start and len(kept) < self._horizon:
            low = max(start, end - (self._horizon - len(kept)))
            chunk = list(steps[low:end] if sliced else (steps[i] for i in range(low, end)))
            if not isinstance(steps, StepList):  # a scan's steps were built as Steps
                _check_steps(chunk, low)
            polled = self._polls(steps, chunk, low, start) if self.exempt_polling else ()
            if not kept and not polled and not self.exempt_tools and self.exempt_if is None:
                return chunk  # nothing to leave out: the chunk fills the horizon
            kept.extend(
                chunk[offset]
                for offset in range(len(chunk) - 1, -1, -1)
                if offset not in polled and not self._exempt(chunk[offset])
            )
            end = low
        kept.reverse()
        return kept

    def _polls(
        self, steps: Sequence[Step], chunk: list[Step], low: int, start: int
    ) -> frozenset[int]:
        """The offsets in ``chunk`` (``steps[low:]``) of the polls (see :mod:`~._polling`):
        the steps before it are read, back to ``start``, only when one in it reports running."""
        reports = [self._keys.running(step) for step in chunk]
        if all(report is None or not report.asks for report in reports):
            return frozenset()  # the common case: nothing asks about a process still running
        first = max(start, low - POLL_LOOKBACK)
        before = [steps[i] for i in range(first, low)]
        if not isinstance(steps, StepList):
            _check_steps(before, first)
        reports = [*(self._keys.running(step) for step in before), *reports]
        return frozenset(found - len(before) for found in polls(reports, start=len(before)))

    def _exempt(self, step: Step) -> bool:
        if step["action"] in self.exempt_tools:
            return True
        return self.exempt_if is not None and bool(self.exempt_if(step))

    def candidates(self, steps: Sequence[Step], *, since: int | None = None) -> list[Detection]:
        """Every enabled pattern at the end of ``steps``, fired or not (``redundant`` may be 0).

        ``since`` is the position of the first step after the user's latest *new* request
        (:attr:`StepScan.since <tokenlean.loop_guard._steps.StepScan.since>`): only steps from
        there on are evidence, earlier ones only tell whether the run has used tools before.
        ``None`` means the caller does not know where user messages came (steps alone): every
        step is evidence, but ``talking`` is not claimed (see the module docstring).
        """
        _check_sequence(steps)
        if since is not None and (type(since) is not int or since < 0):
            checks.integer(since, "since", at_least=0)  # refuses it
        tail = self.active(steps, start=since or 0)
        if not tail:
            return []
        found: list[Detection] = []
        if "talking" in self.patterns and since is not None:
            replies = talking(tail)
            # Checked last and only for a real run of replies: a pure chat never pays for it.
            if replies is not None and replies.redundant and any(s["action"] for s in steps):
                found.append(replies)
        if "failing" in self.patterns:
            found += [d for d in [failing(tail, self._keys)] if d is not None]
        found += periodic(tail, self.max_period, self.patterns, self._keys)
        return found

    def fires(self, detection: Detection) -> bool:
        """Whether a candidate reaches its pattern's threshold."""
        needed = {
            "repeat": self.repeat_after - 1,
            "failing": self.failing_after - 1,
            "talking": self.talking_after - 1,
        }.get(detection.pattern, detection.period * (self.cycle_repeats - 1))
        return detection.redundant >= needed

    def detect(self, steps: Sequence[Step], *, since: int | None = None) -> Detection | None:
        """The strongest firing pattern at the end of ``steps``, or ``None``.

        ``since`` as for :meth:`candidates`.
        """
        firing = [d for d in self.candidates(steps, since=since) if self.fires(d)]
        if not firing:
            return None
        return max(firing, key=lambda d: (d.redundant, -PATTERNS.index(d.pattern)))

    def signals(self, steps: Sequence[Step], *, since: int | None = None) -> dict[str, float]:
        """``streak``, ``hedge`` and ``diversity`` in [0, 1] (see :mod:`~.signals`).

        ``streak`` counts the redundant steps of the candidates for ``since`` (as for
        :meth:`candidates`); ``hedge`` and ``diversity`` read the latest steps whatever it is.
        """
        tail = self.active(steps)
        redundant = max((d.redundant for d in self.candidates(steps, since=since)), default=0)
        keys = [_signal_key(s, self._keys) for s in tail[-self.signal_window :]]
        return {
            "streak": streak_score(redundant),
            "hedge": hedge_score([s["thought"] for s in tail], self.hedge_window),
            "diversity": diversity_loss(keys, self.signal_window),
        }


def _check_sequence(steps: object) -> None:
    """Refuse ``steps`` when it is not a sequence (a check runs on every model call: the plain
    types are told by their type, without the ABC checks)."""
    if type(steps) not in (list, tuple, StepList):
        checks.sequence(steps, "steps", of="Step dicts (see build_steps)")


def _check_steps(chunk: Sequence[object], first: int) -> None:
    """Refuse the last step of ``chunk`` (``steps[first:]``) that is not a :class:`Step` (only
    the steps a check reads are checked)."""
    if all(type(step) is dict and step.keys() >= _STEP_KEYS for step in chunk):
        return  # the common case: plain dicts, checked without the ABC or building a set
    for offset in range(len(chunk) - 1, -1, -1):
        _check_step(chunk[offset], first + offset)


def _check_step(step: object, index: int) -> None:
    """Refuse ``steps[index]`` when it is not a :class:`Step`."""
    if isinstance(step, Mapping) and step.keys() >= _STEP_KEYS:
        return
    raise checks.ArgumentTypeError(
        f"steps[{index}] must be a Step dict with {sorted(_STEP_KEYS)} (see build_steps), "
        f"got {checks.described(step)}"
    )


_STEP_KEYS = frozenset(Step.__annotations__)


def _signal_key(step: Step, keys: StepKeys) -> tuple[str, str]:
    if step["action"]:
        return keys.key(step)
    return "", canonical_text(step["thought"])


#: The detector of :func:`detect_stuck` and :func:`loop_signals`: the default thresholds, one
#: per process like a default argument. The keys it remembers are its own (a ``signals_fn``
#: such as :func:`loop_signals` is asked about the same latest steps on every call).
DEFAULT_DETECTOR = LoopDetector()


def detect_stuck(steps: Sequence[Step]) -> Detection | None:
    """The default detector's verdict on ``steps`` alone (see :class:`LoopDetector`).

    Steps alone never show ``talking``; :meth:`LoopDetector.detect` with ``since`` does.
    """
    return DEFAULT_DETECTOR.detect(steps)


def loop_signals(steps: Sequence[Step]) -> dict[str, float]:
    """Loop-likelihood signals in [0, 1], usable directly as a ``signals_fn``.

    Each rises as looping gets more likely (:mod:`tokenlean.loop_guard._signals` has the formulas):
    ``streak`` counts the latest steps that only repeated earlier ones (same canonical action
    and observation in a row or in a short cycle, the same action failing in a row) and passes
    0.7 exactly where the default patterns fire on ``steps`` alone (replies without tool calls
    in a row are not counted: the steps do not say whether a user answered between them);
    ``hedge`` measures hedging and self-doubt in the latest thoughts; ``diversity`` is the
    *loss* of diversity among the latest (action, observation) pairs, 1 when they are all one.
    """
    return DEFAULT_DETECTOR.signals(steps)
