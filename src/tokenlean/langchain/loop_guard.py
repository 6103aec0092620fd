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
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ContextT,
    ModelRequest,
    PrivateStateAttr,
    ResponseT,
)
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from typing_extensions import NotRequired, TypedDict, Unpack

from tokenlean import checks
from tokenlean._failopen import FailOpen, fail_open
from tokenlean.langchain._adapter import ViewCache
from tokenlean.langchain._helpers import RequestRewriter, Update, no_tool_choice, state_hooks
from tokenlean.langchain._memos import StepMemo
from tokenlean.loop_guard import (
    Detection,
    Episode,
    LoopGuard,
    LoopGuardArguments,
    Response,
    Step,
)

__all__ = ["ID_PREFIX", "STATE_KEY", "LoopGuardMiddleware", "LoopGuardRecord", "LoopGuardState"]

logger = logging.getLogger(__name__)

STATE_KEY = "tokenlean_loop_guard"
#: Ids of the messages this middleware adds start with this.
ID_PREFIX = "tokenlean-loop-guard-"


class LoopGuardRecord(TypedDict):
    """The current episode as stored in agent state (step counts, -1 for never)."""

    level: int  # rungs of the ladder used in this episode
    seen_at: int  # step count at the last detection
    final_at: int  # step count at which the forced-answer call is due


class LoopGuardState(AgentState[ResponseT]):
    """Agent state with the loop guard's episode, private to :class:`LoopGuardMiddleware`."""

    tokenlean_loop_guard: NotRequired[Annotated[LoopGuardRecord, PrivateStateAttr]]


class LoopGuardMiddleware(
    LoopGuard,
    RequestRewriter[ContextT, ResponseT],
    AgentMiddleware[LoopGuardState[ResponseT], ContextT, ResponseT],
):
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
        final_tool_choice: str | dict[str, Any] | None = None,
        **arguments: Unpack[LoopGuardArguments],
    ) -> None:
        super().__init__(**arguments)
        self.detector = self.ladder.detector
        self.responses = self.ladder.responses
        self.recovery_steps = self.ladder.recovery_steps
        self.final_tool_choice = checks.tool_choice(final_tool_choice, "final_tool_choice")
        self._steps = StepMemo(ViewCache())

    # -- hooks (sync and async share the helpers below) -----------------------------------

    before_model, abefore_model = state_hooks("_check", can_jump_to=["end"])

    # -- helpers ---------------------------------------------------------------------------

    def _check(self, state: Mapping[str, Any]) -> Update:
        with self._fail_open("checking for loops"):
            scan = self._steps.scan(state.get("messages") or [])
            record = Episode.from_record(state.get(STATE_KEY)).to_record()
            self._log.checked()
            return self._respond(scan.steps, scan.since, record)  # type: ignore[arg-type]
        return None

    def _respond(self, steps: Sequence[Step], since: int, record: LoopGuardRecord) -> Update:
        """The state update for this check: nothing, a new record, or a response."""
        reaction = self.ladder.react(steps, since, Episode.from_record(record))
        if reaction is None:
            return None
        new = reaction.episode.to_record()
        if reaction.rung is None:
            return {STATE_KEY: new}
        n = reaction.episode.seen_at
        self._log.record(reaction.rung, reaction.trigger, n, reaction.detection)
        return {STATE_KEY: new, **self._action(reaction.rung, reaction.detection, n)}

    def _action(self, rung: Response, detection: Detection | None, n: int) -> dict[str, Any]:
        text = self.ladder.text(rung, detection)
        message_id = f"{ID_PREFIX}{rung}-{n}"
        if rung == "end":
            return {"messages": [AIMessage(content=text, id=message_id)], "jump_to": "end"}
        return {"messages": [HumanMessage(content=text, id=message_id)]}

    def _rewrite_request(self, request: ModelRequest[ContextT]) -> ModelRequest[ContextT]:
        """The forced-answer request right after the ``final`` rung; else the request itself."""
        with self._fail_open("forcing a final answer"):
            episode = Episode.from_record(request.state.get(STATE_KEY))
            if not episode.forces_answer(_step_count(request.messages)):
                return request
            return request.override(
                tool_choice=no_tool_choice(request.model, self.final_tool_choice)
            )
        return request

    def _fail_open(self, what: str) -> FailOpen:
        """A failure while ``what`` is logged and counted; the agent goes on without the guard."""
        return fail_open(
            logger,
            "LoopGuardMiddleware failed %s; continuing without it",
            what,
            on_error=self._log.failed,
        )


def _step_count(messages: Sequence[AnyMessage | BaseMessage]) -> int:
    """How many steps :func:`build_steps` makes of ``messages`` (one per tool call or reply)."""
    return sum(max(1, len(m.tool_calls)) for m in messages if isinstance(m, AIMessage))
