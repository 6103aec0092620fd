"""Stop agents that loop, gently first: nudge, then force a final answer, then end the run.

Before each model call the steps so far are checked for stuck patterns
(:class:`tokenlean.loop_guard._detect.LoopDetector`). The first time one fires the agent gets a
nudge (a human message appended to the conversation). If the loop goes on, the next call is made
with ``tool_choice="none"`` after a message asking for the final answer. If it still goes on
(another stuck pattern, or tool calls despite the request to answer), the run ends with an AI
message saying why. The ladder of responses is configurable.

Only steps since the user's latest *new* request count as evidence: a user who asks something
else starts afresh (so a chat assistant answering different questions without tools is not
"talking in circles"), while a harness repeating the same prompt ("continue") does not.

Per-run state (how far up the ladder this episode is) lives in agent state, so checkpointers
persist it; an episode ends after ``recovery_steps`` steps with no stuck pattern, and a later
loop starts again from the first rung. Stats on the instance are guarded by a lock.

Cache behaviour: the nudge and the final-answer request are appended as new messages, so no
byte already sent changes. ``tool_choice`` is a request parameter, not message bytes; Anthropic
documents that changing it invalidates the cached *messages* (tools and system stay cached), so
on Anthropic the one forced-answer call writes its messages to the cache again.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ContextT,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
    ResponseT,
    hook_config,
)
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime
from typing_extensions import NotRequired, TypedDict

from tokenlean import checks
from tokenlean._failopen import FailOpen, fail_open
from tokenlean.langchain._adapter import ViewCache
from tokenlean.langchain._helpers import StepMemo, no_tool_choice
from tokenlean.loop_guard._detect import Detection, LoopDetector
from tokenlean.loop_guard._steps import Step
from tokenlean.stats import Tally

logger = logging.getLogger(__name__)

Response = Literal["nudge", "final", "end"]
RESPONSES: tuple[Response, ...] = ("nudge", "final", "end")
STATE_KEY = "tokenlean_loop_guard"
#: Ids of the messages this middleware adds start with this.
ID_PREFIX = "tokenlean-loop-guard-"
#: The trigger recorded when the model kept calling tools after being asked for its answer.
IGNORED_FINAL = "ignored-final"
_COUNTER_OF: dict[Response, str] = {"nudge": "nudges", "final": "final_answers", "end": "ends"}

Text = str | Callable[[Detection | None], str]


def default_nudge(detection: Detection | None) -> str:
    what = f" ({detection.describe()})" if detection else ""
    return (
        f"You seem to be repeating yourself without making progress{what}. Do not repeat that "
        "step again: try a different approach, or give your final answer if you have enough."
    )


def default_final(detection: Detection | None) -> str:
    what = f" ({detection.describe()})" if detection else ""
    return (
        f"You are still repeating yourself{what}. Tools are disabled for your next reply: give "
        "your final answer now with what you have found, and say what is left unfinished."
    )


def default_end(detection: Detection | None) -> str:
    what = f" ({detection.describe()})" if detection else ""
    return f"Run stopped by the loop guard: the agent kept repeating itself{what}."


class LoopGuardRecord(TypedDict):
    """The current episode as stored in agent state (step counts, -1 for never)."""

    level: int  # rungs of the ladder used in this episode
    seen_at: int  # step count at the last detection
    final_at: int  # step count at which the forced-answer call is due


class LoopGuardState(AgentState[ResponseT]):
    """Agent state with the loop guard's episode, private to :class:`LoopGuardMiddleware`."""

    tokenlean_loop_guard: NotRequired[Annotated[LoopGuardRecord, PrivateStateAttr]]


@dataclass(frozen=True, slots=True)
class LoopEvent:
    """One response of the guard: what it did, what triggered it, at which step count."""

    response: Response
    pattern: str
    steps: int
    detail: str


@dataclass(frozen=True, slots=True)
class LoopGuardStats:
    """Counters over every run of one middleware instance, and the latest events."""

    checks: int = 0
    nudges: int = 0
    final_answers: int = 0
    ends: int = 0
    errors: int = 0
    by_pattern: Mapping[str, int] = field(default_factory=dict)
    events: tuple[LoopEvent, ...] = ()


class LoopGuardMiddleware(AgentMiddleware[LoopGuardState[ResponseT], ContextT, ResponseT]):
    """Detect stuck patterns and respond with a graded ladder (nudge, final answer, end).

    Args:
        detector: Thresholds, exemptions and enabled patterns (default :class:`LoopDetector`).
        responses: The ladder, one rung per detection that goes on; ``"end"`` may only be last.
            Once the ladder is used up nothing more happens, except that ``"end"`` repeats.
        recovery_steps: Steps without a stuck pattern after which an episode is over.
        nudge_text, final_text, end_text: Texts (or functions of the detection) of the nudge,
            the final-answer request and the closing AI message.
        final_tool_choice: ``tool_choice`` of the forced-answer call; by default ``"none"``, or
            ``{"type": "none"}`` for ``ChatAnthropic``.
        max_events: How many of the latest events ``stats.events`` keeps.
    """

    state_schema = LoopGuardState

    def __init__(
        self,
        *,
        detector: LoopDetector | None = None,
        responses: Sequence[Response] = RESPONSES,
        recovery_steps: int = 20,
        nudge_text: Text = default_nudge,
        final_text: Text = default_final,
        end_text: Text = default_end,
        final_tool_choice: str | dict[str, Any] | None = None,
        max_events: int = 1000,
    ) -> None:
        super().__init__()
        if detector is not None and not isinstance(detector, LoopDetector):
            raise checks.ArgumentTypeError(
                f"detector must be a LoopDetector, got {checks.described(detector)}"
            )
        self.detector = detector or LoopDetector()
        self.responses = _ladder(responses)
        self.recovery_steps = checks.integer(recovery_steps, "recovery_steps", at_least=1)
        checks.integer(max_events, "max_events", at_least=0)
        self.texts: dict[Response, Text] = {
            "nudge": nudge_text,
            "final": final_text,
            "end": end_text,
        }
        for rung, text in self.texts.items():
            if not callable(text) and not (isinstance(text, str) and text.strip()):
                raise ValueError(f"{rung}_text must be a non-empty string or a function")
        self.final_tool_choice = checks.tool_choice(final_tool_choice, "final_tool_choice")
        self._lock = threading.Lock()
        self._tally = Tally(LoopGuardStats)
        self._patterns: Counter[str] = Counter()
        self._events: deque[LoopEvent] = deque(maxlen=max_events)
        self._steps = StepMemo(ViewCache())

    @property
    def stats(self) -> LoopGuardStats:
        with self._lock:
            return self._tally.snapshot(by_pattern=dict(self._patterns), events=tuple(self._events))

    # -- hooks (sync and async share the helpers below) -----------------------------------

    @hook_config(can_jump_to=["end"])
    def before_model(
        self, state: LoopGuardState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        return self._check(state)

    @hook_config(can_jump_to=["end"])
    async def abefore_model(
        self, state: LoopGuardState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        return self._check(state)

    def wrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], ModelResponse[ResponseT]],
    ) -> ModelResponse[ResponseT]:
        return handler(self._prepare(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], Awaitable[ModelResponse[ResponseT]]],
    ) -> ModelResponse[ResponseT]:
        return await handler(self._prepare(request))

    # -- helpers ---------------------------------------------------------------------------

    def _check(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        with self._fail_open("checking for loops"):
            scan = self._steps.scan(state.get("messages") or [])
            record = _record(state.get(STATE_KEY))
            self._tally.add(checks=1)
            return self._respond(scan.steps, scan.since, record)
        return None

    def _respond(
        self, steps: Sequence[Step], since: int, record: LoopGuardRecord
    ) -> dict[str, Any] | None:
        """The state update for this check: nothing, a new record, or a response."""
        n = len(steps)
        if n <= record["seen_at"]:
            return None  # nothing new since the last detection
        detection = self.detector.detect(steps, since=since)
        trigger: str | None = detection.pattern if detection else None
        if trigger is None and _ignored_final(steps, record):
            trigger = IGNORED_FINAL
        if trigger is None:
            return None
        level = record["level"] if n - record["seen_at"] <= self.recovery_steps else 0
        rung = self._rung(level)
        new: LoopGuardRecord = {
            "level": level + 1 if rung is not None and level < len(self.responses) else level,
            "seen_at": n,
            "final_at": n if rung == "final" else -1,
        }
        if rung is None:
            return {STATE_KEY: new}
        self._record_event(rung, trigger, n, detection)
        return {STATE_KEY: new, **self._action(rung, detection, n)}

    def _rung(self, level: int) -> Response | None:
        if level < len(self.responses):
            return self.responses[level]
        return "end" if self.responses[-1] == "end" else None

    def _action(self, rung: Response, detection: Detection | None, n: int) -> dict[str, Any]:
        text = self._text(rung, detection)
        message_id = f"{ID_PREFIX}{rung}-{n}"
        if rung == "end":
            return {"messages": [AIMessage(content=text, id=message_id)], "jump_to": "end"}
        return {"messages": [HumanMessage(content=text, id=message_id)]}

    def _text(self, rung: Response, detection: Detection | None) -> str:
        text = self.texts[rung]
        return text if isinstance(text, str) else text(detection)

    def _prepare(self, request: ModelRequest[ContextT]) -> ModelRequest[ContextT]:
        """The forced-answer request right after the ``final`` rung; else the request itself."""
        with self._fail_open("forcing a final answer"):
            record = _record(request.state.get(STATE_KEY))
            if record["final_at"] < 0 or record["final_at"] != _step_count(request.messages):
                return request
            return request.override(
                tool_choice=no_tool_choice(request.model, self.final_tool_choice)
            )
        return request

    def _record_event(
        self, rung: Response, trigger: str, n: int, detection: Detection | None
    ) -> None:
        detail = detection.describe() if detection else trigger
        with self._lock:
            self._tally.add(**{_COUNTER_OF[rung]: 1})
            self._patterns[trigger] += 1
            self._events.append(LoopEvent(rung, trigger, n, detail))

    def _fail_open(self, what: str) -> FailOpen:
        """A failure while ``what`` is logged and counted; the agent goes on without the guard."""
        return fail_open(
            logger,
            "LoopGuardMiddleware failed %s; continuing without it",
            what,
            on_error=lambda: self._tally.add(errors=1),
        )


def _ladder(responses: Sequence[Response]) -> tuple[Response, ...]:
    if isinstance(responses, str):  # its letters would be read as the ladder
        raise checks.ArgumentTypeError(
            f"responses must be a sequence of {RESPONSES} such as ('nudge', 'final'), "
            f"not a bare string, got {responses!r}"
        )
    ladder = tuple(checks.sequence(responses, "responses", of=f"{RESPONSES}"))
    if not ladder or any(r not in RESPONSES for r in ladder):
        raise ValueError(f"responses must be a non-empty sequence of {RESPONSES}, got {ladder}")
    if "end" in ladder[:-1]:
        raise ValueError("'end' can only be the last response: nothing runs after it")
    return ladder


def _record(raw: object) -> LoopGuardRecord:
    """The stored record, or a fresh one (a missing or malformed record starts over)."""
    if not isinstance(raw, Mapping):
        raw = {}
    return {
        "level": int(raw.get("level", 0)),
        "seen_at": int(raw.get("seen_at", -1)),
        "final_at": int(raw.get("final_at", -1)),
    }


def _ignored_final(steps: Sequence[Step], record: LoopGuardRecord) -> bool:
    """The model answered the forced-answer call with tool calls instead of an answer."""
    final_at = record["final_at"]
    return 0 <= final_at < len(steps) and bool(steps[final_at]["action"])


def _step_count(messages: Sequence[AnyMessage | BaseMessage]) -> int:
    """How many steps :func:`build_steps` makes of ``messages`` (one per tool call or reply)."""
    return sum(max(1, len(m.tool_calls)) for m in messages if isinstance(m, AIMessage))
