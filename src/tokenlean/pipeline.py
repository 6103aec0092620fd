"""The planner of a turn, which every way in calls: the one place that decides what is sent.

Every way in translates its messages to the neutral view (:class:`~tokenlean.transcript.Message`),
has them planned here, and translates the edits back: the ways in that re-send a whole history
(the raw provider bodies behind the proxy, the SDK wrappers and LiteLLM; pydantic-ai; AgentScope)
through :class:`Planner`, by way of :func:`tokenlean.history.rewrite_history`; LangChain's
middleware, whose agent state keeps the edited history and which may list the retrieval tool
from any call on, one call at a time through :func:`plan_offered_turn`, by way of
:func:`tokenlean.turn.rewrite_turn`. Both run :func:`plan_turn` on each turn.
A *turn* is an assistant message with what came since the turn before it and the tool results
that answer it. :func:`plan_turn` first cuts the turn's answered inputs
(:func:`~tokenlean.shorten._inputs.plan_inputs`), then shortens its new results against
everything before them (:func:`~tokenlean.shorten._firstsight.plan_first_sight`): in that order,
so the output shortener never points at lines of an input that the model will no longer see. A
:class:`~tokenlean.readback.ReadBack` names the originals' handles and says how markers point
to them; a :class:`~tokenlean.shorten._firstsight.SeenLog` carries the lines already shown.

A client that re-sends its whole history on every request is planned by :class:`Planner`, as a
pure function of that history: message *i* from messages ``0..i`` and the policy alone, one
turn at a time (a past call's inputs also look at whether the results that follow it answer
it). Every tool result is shortened as at first sight and every answered call's long inputs are
cut before the turn is first sent back: the decisions the middleware makes, without any state.
Requests grow by a few messages at a time, so the walk is memoised by content
(:mod:`tokenlean._checkpoints`): a request resumes from the longest history it shares with an
earlier one, whichever way it came in. The memo is only a cache: a cold process plans the same
bytes.
"""

from __future__ import annotations

from tokenlean._history_plan import (
    MEMO_ENTRIES,
    HistoryEdit,
    HistoryPlan,
    Planner,
    PlannerSettings,
)
from tokenlean._turn_plan import (
    OfferedTurn,
    TurnPlan,
    plan_offered_turn,
    plan_turn,
    saved_tokens,
)

__all__ = [
    "MEMO_ENTRIES",
    "HistoryEdit",
    "HistoryPlan",
    "OfferedTurn",
    "Planner",
    "PlannerSettings",
    "TurnPlan",
    "plan_offered_turn",
    "plan_turn",
    "saved_tokens",
]
