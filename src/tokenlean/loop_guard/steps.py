"""Agent steps, and the canonical forms loop detection compares them by.

A *step* is the dict a ``signals_fn`` receives (the reference ``TokenSavingMiddleware`` format):
``step_index``, ``action`` (tool name or ``""``), ``action_input`` (arguments or ``{}``),
``thought`` (the assistant text), ``observation`` (the matched tool result or ``""``) and
``is_error``. An assistant turn with several tool calls gives one step per call.

Two steps are "the same" for loop detection when their canonical forms are equal:
:func:`canonical_text` removes what changes between two runs of the very same command
(whitespace, timestamps and durations, process ids, hex ids and addresses, random temp-file
names), :func:`canonical_action` also sorts argument keys. :func:`is_failure` says whether a
step failed, from its error status or from the exit code or error line its output opens with.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypedDict, overload

from tokenlean import checks
from tokenlean.transcript import Message, is_injected


class Step(TypedDict):
    step_index: int
    action: str
    action_input: dict[str, Any]
    thought: str
    observation: str
    is_error: bool


def build_steps(messages: Sequence[Message], *, first_index: int = 0) -> list[Step]:
    """Steps from a neutral transcript, pairing tool calls with results by ``tool_call_id``.

    ``first_index`` is the ``step_index`` of the first step (for steps that continue others).
    """
    checks.messages(messages)
    checks.integer(first_index, "first_index", at_least=0)
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
    It is what :meth:`LoopDetector.detect <tokenlean.loop_guard.detect.LoopDetector.detect>`
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


_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_PYTEST_OF = "pytest-of-"
_PATH_PART = re.compile(r"[^/\s]*")
_PYTEST_N = re.compile(r"/pytest-\d+")
# A UUID from its first hyphen on (the 8 hex digits before it are checked by the lookbehind):
# starting at a literal lets ``re`` jump from hyphen to hyphen instead of trying every position.
_UUID_TAIL = re.compile(
    r"-(?<=\b[0-9a-f]{8}-)[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I
)


def _sub(pattern: str, replacement: str, flags: int = 0) -> Callable[[str], str]:
    return functools.partial(re.compile(pattern, flags).sub, replacement)


def _uuids(text: str) -> str:
    r"""``re.sub(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>",
    text, flags=re.I)``, seven times faster on logs (two UUIDs can never overlap)."""
    parts: list[str] = []
    done = 0
    for match in _UUID_TAIL.finditer(text):
        parts += [text[done : match.start() - 8], "<uuid>"]
        done = match.end()
    return "".join(parts) + text[done:] if parts else text


def _pytest_dirs(text: str) -> str:
    r"""``re.sub(r"pytest-of-[^/\s]+/pytest-\d+", "pytest-of-<user>/pytest-<n>", text)``, linear.

    The regex restarts at every ``pytest-of-`` and rescans the rest of the path part each time,
    so a long part repeating ``pytest-of-`` costs quadratic time. Every start inside one part
    reaches the same end, so each part is scanned once here.
    """
    parts: list[str] = []
    done, part_end = 0, -1
    start = text.find(_PYTEST_OF)
    while start >= 0:
        name = start + len(_PYTEST_OF)
        if name >= part_end:  # outside the part scanned last: find where this one ends
            part_end = _PATH_PART.match(text, name).end()  # type: ignore[union-attr]  # matches ""
        tail = _PYTEST_N.match(text, part_end) if part_end > name else None
        if tail is None:
            start = text.find(_PYTEST_OF, start + 1)
            continue
        parts += [text[done:start], "pytest-of-<user>/pytest-<n>"]
        done = tail.end()
        start = text.find(_PYTEST_OF, done)
    return "".join(parts) + text[done:] if parts else text


def _when(may_match: Callable[[str], bool], replace: Callable[[str], str]) -> Callable[[str], str]:
    """``replace``, skipped when ``may_match`` (a C-level test) says its pattern cannot match:
    ``re`` tries a pattern that starts with a class at every position, which costs more than
    the whole test."""
    return lambda text: replace(text) if may_match(text) else text


# ASCII text with every digit (or hex digit) written "0": a pattern needing "\d{4}-\d{2}" can
# only match where this holds "0000-00". Only for ASCII text: ``\d`` and ``re.I`` also match
# other characters (Arabic digits, the long s for "s"), so other text is always handed to the regex.
_DIGIT_SHAPE = bytes.maketrans(b"123456789", b"0" * 9)
_HEX_SHAPE = bytes.maketrans(b"123456789abcdefABCDEF", b"0" * 21)


def _shape_has(table: bytes, *needles: bytes) -> Callable[[str], bool]:
    def may_match(text: str) -> bool:
        if not text.isascii():
            return True
        shape = text.encode("ascii").translate(table)
        return any(needle in shape for needle in needles)

    return may_match


def _ascii_words(*words: str) -> Callable[[str], bool]:
    """Whether ``text`` may hold one of ``words`` in any case (always, if it is not ASCII)."""

    def may_match(text: str) -> bool:
        if not text.isascii():
            return True
        lower = text.lower()
        return any(word in lower for word in words)

    return may_match


def _has(literal: str) -> Callable[[str], bool]:
    return lambda text: literal in text


# Order matters: UUIDs and temp names before bare hex, full timestamps before their time of day.
# Every step is linear (tests/test_worst_case.py feeds each its worst inputs). ``\bX`` is written
# ``X(?<!\wX)`` (X's first character, then "not a word character before it"): the same matches,
# but a pattern that starts with a literal or a class lets ``re`` skip ahead to the positions
# where it can start, several times faster on large outputs. Between optional spaces, an optional
# separator is ``\s*(?:[=:#]\s*)?``, not ``\s*[=:#]?\s*`` (which tries every way of splitting a
# long run of spaces between its two halves: quadratic). A pattern that starts with a class is
# guarded by what any match of it must contain (see ``_when``).
_VOLATILE: tuple[Callable[[str], str], ...] = (
    _uuids,
    _when(_has("/folders/"), _sub(r"/(?:private/var|var)/folders/[^/\s]+/[^/\s]+/T/", "<tmpdir>/")),
    _pytest_dirs,
    _when(_has("tmp"), _sub(r"tmp(?<!\wtmp)[._]?(?=[A-Za-z_]*\d)[A-Za-z0-9_]{6,}", "tmp<id>")),
    _when(
        _shape_has(_DIGIT_SHAPE, b"0000-00-00"),
        _sub(
            r"\d(?<!\w\d)\d{3}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?)?"
            r"(?:\s?(?:Z|UTC|[+-]\d{2}:?\d{2}))?",
            "<time>",
        ),
    ),
    _sub(rf"{_MONTH}(?<!\w{_MONTH})[a-z]*\s+\d{{1,2}}\s+(?:\d{{1,2}}:\d{{2}}|\d{{4}})\b", "<time>"),
    _when(
        _shape_has(_DIGIT_SHAPE, b"0:00:00"),
        _sub(r"\d(?<!\w\d)\d?:\d{2}:\d{2}(?:[.,]\d+)?\b", "<time>"),
    ),
    _when(  # unix epochs, 2017-2033
        _shape_has(_DIGIT_SHAPE, b"0" * 10),
        _sub(r"1(?<!\w1)[5-9]\d{8}(?:\.\d+|\d{3})?\b", "<time>"),
    ),
    _sub(r"\d(?<!\w\d)\d*(?:\.\d+)?\s?(?:ms|us|µs|ns|s|secs?|seconds?)\b", "<duration>"),
    _when(
        _ascii_words("pid", "process", "thread"),
        _sub(r"(?=[pt])\b(pid|process|thread)(\s*(?:[=:#]\s*)?)\d+", r"\1\2<pid>", re.I),
    ),
    _sub(r"/proc/\d+", "/proc/<pid>"),
    _when(_has("["), _sub(r"^\[\d+\]\s+\d+$", "[<job>] <pid>", re.M)),
    _sub(r"0(?<!\w0)x[0-9a-f]+\b", "0x<hex>", re.I),
    _when(
        _shape_has(_HEX_SHAPE, b"0" * 7),
        _sub(  # 7+ hex digits holding a digit and a letter: the first is one, the rest the other
            r"[0-9a-f](?<!\w[0-9a-f])(?:(?<=\d)(?=[0-9a-f]*[a-f])|(?<!\d)(?=[0-9a-f]*\d))"
            r"[0-9a-f]{6,}\b",
            "<hex>",
            re.I,
        ),
    ),
)


#: Longer texts are compared by their canonical head and tail and the exact bytes between.
CANONICAL_SPAN = 64_000


@lru_cache(maxsize=2048)
def canonical_text(text: str) -> str:
    """``text`` with volatile parts replaced by placeholders and whitespace collapsed.

    Replaced: UUIDs; ISO dates and timestamps, ``ls``-style dates, times of day, unix epochs and
    durations (``0.12s``); process and thread ids (``pid 123``, ``/proc/123``, ``[1] 4242``);
    ``0x`` addresses and hex ids of 7+ characters mixing digits and letters (git hashes); macOS
    temp dirs, pytest temp dirs and random ``tmpXXXXXX`` names (with a digit in them). Every
    whitespace run becomes one space. Two outputs of the same command that differ only in these
    parts compare equal.

    A text over ``2 * CANONICAL_SPAN`` characters is canonicalised in its first and last
    :data:`CANONICAL_SPAN` characters only, with a digest of the exact text between: two huge
    outputs compare equal only when their middles are byte for byte the same (when in doubt, a
    step is not a repeat), and the work and the memory stay bounded.
    """
    if len(text) > 2 * CANONICAL_SPAN:
        middle = text[CANONICAL_SPAN:-CANONICAL_SPAN].encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(middle).hexdigest()[:16]
        head, tail = text[:CANONICAL_SPAN], text[-CANONICAL_SPAN:]
        return f"{canonical_text(head)} <{len(middle)} bytes {digest}> {canonical_text(tail)}"
    for replace in _VOLATILE:
        text = replace(text)
    return " ".join(text.split())


def _canonical_value(value: object) -> object:
    if isinstance(value, str):
        return canonical_text(value)
    if isinstance(value, Mapping):
        return {str(key): _canonical_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical_value(item) for item in value]
    return value


def canonical_action(step: Step) -> str:
    """The tool name and its arguments, keys sorted and string values canonicalised."""
    args = _canonical_value(step["action_input"])
    body = json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    return f"{step['action']}{body}"


def step_key(step: Step) -> tuple[str, str]:
    """What must match for two steps to be the same: canonical action and observation.

    Remembered per step object (a detector looks at the same latest steps on every call), and
    worked out again if the step's action, input or observation was replaced since.
    """
    return step_action_key(step), step_observation_key(step)


def step_action_key(step: Step) -> str:
    """The first half of :func:`step_key` (remembered the same way): two steps whose actions
    differ differ, whatever they observed, so the observation need not be read."""
    return _keys_of(step).action_key


def step_observation_key(step: Step) -> str:
    """The second half of :func:`step_key` (remembered the same way): the canonical
    observation, worked out only when first asked for (an output can be long)."""
    keys = _keys_of(step)
    if keys.observation_key is None:
        keys.observation_key = canonical_text(step["observation"])
    return keys.observation_key


@dataclass(slots=True)
class _StepKeys:
    """A step's keys, and the parts of the step they were worked out from."""

    step: Step  # held, so that its id is not reused while the keys are remembered
    action: str
    action_input: object
    observation: str
    action_key: str
    observation_key: str | None = None  # worked out when first asked for


def _keys_of(step: Step) -> _StepKeys:
    """The step's remembered keys, worked out again if its action, input or observation was
    replaced since."""
    # Read without the lock (a dict lookup is atomic; writes hold it): a detector reads the
    # keys of the latest steps on every call.
    keys = _KEYS.get(id(step))
    if (
        keys is not None
        and keys.step is step
        and keys.action_input is step["action_input"]
        and keys.action == step["action"]
        and keys.observation == step["observation"]
    ):
        return keys
    keys = _StepKeys(
        step, step["action"], step["action_input"], step["observation"], canonical_action(step)
    )
    with _KEYS_LOCK:
        _KEYS[id(step)] = keys
        if len(_KEYS) > _MAX_KEYS:
            _KEYS.popitem(last=False)
    return keys


_MAX_KEYS = 4096
_KEYS: OrderedDict[int, _StepKeys] = OrderedDict()
_KEYS_LOCK = threading.Lock()


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
