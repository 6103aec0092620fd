"""Stop an AgentScope agent that loops, gently first: nudge, then force an answer, then end.

Before each model call (``on_reasoning``) the agent's steps so far are read from its context
(:mod:`._view`, then the core's :class:`~tokenlean.loop_guard.StepScan`) and the core's
:class:`~tokenlean.loop_guard.Ladder` decides, as for the LangChain
:class:`tokenlean.langchain.LoopGuardMiddleware`, whose docstring gives the rule. This module
only translates the answer: a nudge or a request for the final answer is a hint appended to the
reply's message (new bytes at the end of the prompt); the forced-answer call is made with
``tool_choice="none"`` (or, while a structured output is owed, with only that tool offered);
ending the reply yields a final message without calling the model, its text kept in memory.

The episode (how far up the ladder) lives in ``agent.state.middle_context``, so it survives
what the agent's state survives. A failure is logged and the agent goes on without the guard.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentscope.message import AssistantMsg, TextBlock
from agentscope.middleware import MiddlewareBase
from agentscope.types import ReplyFinishedReason

from tokenlean._failopen import fail_open
from tokenlean.agentscope import _view
from tokenlean.agentscope._hooks import Events, Handler, Kwargs
from tokenlean.agentscope._wrapup import append_hint, wrap_up_choice
from tokenlean.loop_guard import (
    Episode,
    LoopGuard,
    StepScan,
)
from tokenlean.transcript import INJECTED_ID_PREFIX

if TYPE_CHECKING:
    from agentscope.agent import Agent

__all__ = ["ID_PREFIX", "LoopGuardMiddleware"]

logger = logging.getLogger("tokenlean.agentscope")

#: Ids of the hints this middleware appends start with this (so they never count as requests).
ID_PREFIX = f"{INJECTED_ID_PREFIX}loop-guard-"


@dataclass(frozen=True, slots=True)
class _Decision:
    """What to do before this model call."""

    hint: str | None = None
    hint_id: str = ""
    force_answer: bool = False
    end: str | None = None


class LoopGuardMiddleware(LoopGuard, MiddlewareBase):
    """Detect stuck patterns and respond with a graded ladder (nudge, final answer, end).

    Arguments as for :class:`tokenlean.langchain.LoopGuardMiddleware`: ``detector``
    (thresholds and patterns), ``responses`` (the ladder; ``"end"`` only last),
    ``recovery_steps``, the three texts (strings or functions of the detection) and
    ``max_events`` (how many of the latest events ``stats.events`` keeps), taken by
    :class:`~tokenlean.loop_guard._guard.LoopGuard`.
    """

    async def on_reasoning(
        self, agent: Agent, input_kwargs: Kwargs, next_handler: Handler
    ) -> Events:
        decision = _Decision()
        with fail_open(
            logger, "LoopGuardMiddleware failed; continuing without it", on_error=self._log.failed
        ):
            key = await self.get_middleware_key()
            decision = self._decide(agent.state.middle_context, key, agent.state.context)
            if decision.hint is not None:
                append_hint(agent, decision.hint, decision.hint_id)
            if decision.force_answer:
                input_kwargs["tool_choice"] = wrap_up_choice(agent, input_kwargs.get("tool_choice"))
            if decision.end is not None:
                agent.state.append_context(agent.name, [TextBlock(text=decision.end)])
        if decision.end is not None:
            yield AssistantMsg(
                id=agent.state.reply_id,
                name=agent.name,
                content=[TextBlock(text=decision.end)],
                # a StrEnum, which mypy reads as str under the project's 3.10 target
                finished_reason=ReplyFinishedReason.COMPLETED,  # type: ignore[arg-type]
            )
            return
        async for event in next_handler(**input_kwargs):
            yield event

    def _decide(self, state: dict[str, Any], key: str, context: Sequence[Any]) -> _Decision:
        """Climb the ladder on the steps so far, storing the episode under ``key``."""
        scan = StepScan().extend(_view.read(context).messages)
        self._log.checked()
        episode = Episode.from_record(state.get(key))
        reaction = self.ladder.react(scan.steps, scan.since, episode)
        if reaction is not None:
            state[key] = reaction.episode.to_record()
            episode = reaction.episode
        n = len(scan.steps)
        force = episode.forces_answer(n)
        if reaction is None or reaction.rung is None:
            return _Decision(force_answer=force)
        self._log.record(reaction.rung, reaction.trigger, n, reaction.detection)
        text = self.ladder.text(reaction.rung, reaction.detection)
        if reaction.rung == "end":
            return _Decision(end=text)
        return _Decision(hint=text, hint_id=f"{ID_PREFIX}{reaction.rung}-{n}", force_answer=force)
