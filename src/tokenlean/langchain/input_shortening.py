"""Shorten the long inputs of tool calls at first sight, after the calls have run.

An assistant turn is first sent back to the model on the call after the one that produced it.
Before that call, :class:`ToolInputShorteningMiddleware` cuts each long string argument of the
turn's tool calls to its head and tail lines and writes the turn back under the same id, so the
model only ever sees the short form and every later request repeats its bytes: no prompt-cache
break. The decisions are the core's (:func:`tokenlean.shorten.inputs.plan_inputs`); only the
newest turn and what follows it are read. Originals go to the same store as
:class:`~tokenlean.langchain.output_shortening.ToolOutputShorteningMiddleware` uses, so its
``read_original`` tool can show them. List this middleware *before* that one: the output
shortener treats tool-call inputs as already shown, so it must see them cut.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import AnyMessage
from langgraph.runtime import Runtime

from tokenlean import checks
from tokenlean.langchain.adapter import apply_edit
from tokenlean.langchain.helpers import last_ai_index, thread_scope, view_from
from tokenlean.langchain.retrieval import make_retrieval_tool
from tokenlean.shorten.inputs import ArgumentPolicy, InputPlan, plan_inputs
from tokenlean.stats import Tally
from tokenlean.store import RETRIEVAL_TOOL, OriginalStore, StoreChoice

logger = logging.getLogger(__name__)

_DEFAULTS = ArgumentPolicy()


@dataclass(frozen=True, slots=True)
class InputShorteningStats:
    """Totals over every thread this instance served."""

    calls_shortened: int = 0
    tokens_before: int = 0
    tokens_after: int = 0


@dataclass(frozen=True, slots=True)
class _Planned:
    message: AnyMessage
    plan: InputPlan
    scope: str


class ToolInputShorteningMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Cut long tool-call inputs to head and tail lines once the calls have run.

    Args:
        min_tokens, head_lines, tail_lines, never: see
            :class:`~tokenlean.shorten.inputs.ArgumentPolicy` (where every default lives).
        store: where originals are kept (share it with the output-shortening middleware).
            Default: the agent's own store when it has one, else this process's memory.
        retrieval_tool: add a ``read_original`` tool; leave False when another middleware
            already adds one on the same store.
        tool_name: the retrieval tool's name, used in the omission marker. The marker names it
            when this middleware adds the tool, or when it was given a ``store`` or a
            ``tool_name`` (then another middleware is expected to read that store).
    """

    def __init__(
        self,
        *,
        min_tokens: int = _DEFAULTS.min_tokens,
        head_lines: int = _DEFAULTS.head_lines,
        tail_lines: int = _DEFAULTS.tail_lines,
        never: Collection[str] = _DEFAULTS.never,
        store: OriginalStore | StoreChoice | None = None,
        retrieval_tool: bool = True,
        tool_name: str = RETRIEVAL_TOOL,
    ) -> None:
        super().__init__()
        self.policy = ArgumentPolicy(
            min_tokens=min_tokens,
            head_lines=head_lines,
            tail_lines=tail_lines,
            never=never,  # type: ignore[arg-type]  # normalised by the policy
        )
        checks.identifier(tool_name, "tool_name")
        checks.flag(retrieval_tool, "retrieval_tool")
        self.stores = StoreChoice.of(store)  # the given store, else the agent's, else memory
        self.store: OriginalStore = self.stores.default
        self.tool_name = tool_name
        self.tools = [make_retrieval_tool(self.stores, name=tool_name)] if retrieval_tool else []
        readable = retrieval_tool or store is not None or tool_name != RETRIEVAL_TOOL
        self._marker_tool = tool_name if readable else None
        self._tally = Tally(InputShorteningStats)

    never = property(lambda self: self.policy.never)

    @property
    def stats(self) -> InputShorteningStats:
        return self._tally.snapshot()

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        planned = self._prepare(state)
        if planned is None:
            return None
        try:
            store = self.stores.pick(getattr(runtime, "store", None))
            for original in planned.plan.originals:
                store.put(planned.scope, original)
        except Exception:  # never break the agent: send the inputs as they were
            logger.exception("could not keep original tool inputs; inputs left as they are")
            return None
        return self._commit(planned)

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        planned = self._prepare(state)
        if planned is None:
            return None
        try:
            store = self.stores.pick(getattr(runtime, "store", None))
            for original in planned.plan.originals:
                await store.aput(planned.scope, original)
        except Exception:  # never break the agent: send the inputs as they were
            logger.exception("could not keep original tool inputs; inputs left as they are")
            return None
        return self._commit(planned)

    def _prepare(self, state: AgentState[Any]) -> _Planned | None:
        try:
            return self._plan(state.get("messages") or [])
        except Exception:  # never break the agent
            logger.exception("tool-input shortening failed; inputs left as they are")
            return None

    def _plan(self, messages: Sequence[AnyMessage]) -> _Planned | None:
        scope = thread_scope()
        start = last_ai_index(messages)
        if start < 0 or scope is None:  # without a thread the originals could not be read
            return None
        turn = messages[start]
        if not turn.id:
            return None
        plan = plan_inputs(
            view_from(messages, start), self.policy, offset=start, retrieval_tool=self._marker_tool
        )
        if not plan.edits:
            return None
        return _Planned(apply_edit(turn, plan.edits[0]), plan, scope)

    def _commit(self, planned: _Planned) -> dict[str, Any]:
        self._tally.add(
            calls_shortened=planned.plan.calls,
            tokens_before=sum(c.tokens_before for c in planned.plan.cuts),
            tokens_after=sum(c.tokens_after for c in planned.plan.cuts),
        )
        return {"messages": [planned.message]}
