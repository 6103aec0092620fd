"""Shorten the long inputs of tool calls at first sight, after the calls have run.

An assistant turn is first sent back to the model on the call after the one that produced it.
Before that call, :class:`ToolInputShorteningMiddleware` cuts each long string argument of the
turn's tool calls to its head and tail lines and writes the turn back under the same id, so the
model only ever sees the short form and every later request repeats its bytes: no prompt-cache
break. The decisions are the core's (:func:`tokenlean.turn.rewrite_turn`); only the
newest turn and what follows it are read. Originals go to the same store as
:class:`~tokenlean.langchain.output_shortening.ToolOutputShorteningMiddleware` uses, so its
``read_original`` tool can show them. List this middleware *before* that one: the output
shortener treats tool-call inputs as already shown, so it must see them cut.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain_core.messages import AnyMessage, BaseMessage

from tokenlean import checks
from tokenlean._failopen import fail_open
from tokenlean.cost import CachePricing, resolve_pricing
from tokenlean.langchain._adapter import Turns, ViewCache
from tokenlean.langchain._helpers import (
    KeptBeforeCommit,
    last_ai_index,
    middleware_name,
    thread_scope,
)
from tokenlean.langchain._retrieval_gate import RetrievalGate, RetrievalState
from tokenlean.langchain.retrieval import retrieval_tool as retrieval_tool_for
from tokenlean.langchain.retrieval import shared_choice
from tokenlean.langchain.store import StoreChoice
from tokenlean.readback import ToolReadBack
from tokenlean.shorten import (
    OFFER_TOOL,
    InputPlan,
    InputShorteningSettings,
    OfferTool,
    OutputShorteningSettings,
)
from tokenlean.stats import Tally
from tokenlean.store import RETRIEVAL_TOOL, Original, OriginalStore
from tokenlean.tokens import DEFAULT_COUNTER
from tokenlean.turn import TurnContext, rewrite_turn

__all__ = ["InputShorteningState", "InputShorteningStats", "ToolInputShorteningMiddleware"]

logger = logging.getLogger(__name__)

_KEEP_FAILED = "could not keep original tool inputs; inputs left as they are"

_DEFAULTS = InputShorteningSettings()
_OUTPUTS = OutputShorteningSettings()  # the retrieval tool's settings are the output shortener's


@dataclass(frozen=True, slots=True)
class InputShorteningStats:
    """Totals over every thread this instance served."""

    calls_shortened: int = 0
    tokens_before: int = 0
    tokens_after: int = 0


@dataclass(frozen=True, slots=True)
class _Planned:
    message: BaseMessage | None  # None: nothing cut, the call only counted
    plan: InputPlan
    scope: str
    accounted: dict[str, Any]  # the retrieval gate's state update (originals, savings, offer)


class InputShorteningState(RetrievalState):
    """Agent state with the retrieval bookkeeping (shared with the output shortener)."""


class ToolInputShorteningMiddleware(
    KeptBeforeCommit[_Planned, Any, Any], AgentMiddleware[InputShorteningState, Any, Any]
):
    """Cut long tool-call inputs to head and tail lines once the calls have run.

    Args:
        settings: which inputs are cut and how much of each is kept
            (:class:`~tokenlean.shorten.InputShorteningSettings`, where every default lives).
        store: where originals are kept (share it with the output-shortening middleware).
            Default: the agent's own store when it has one, else this process's memory.
        retrieval_tool: add a ``read_original`` tool; leave False when another middleware
            already adds one on the same store.
        tool_name: the retrieval tool's name, used in the omission marker. The marker names it
            when this middleware adds the tool, or when it was given a ``store`` or a
            ``tool_name`` (then another middleware is expected to read that store).
        pricing, offer_tool, min_remaining_calls: whether and when a thread is offered the
            retrieval tool, as for
            :class:`~tokenlean.langchain.ToolOutputShorteningMiddleware` (see
            :class:`~tokenlean.langchain._retrieval_gate.RetrievalGate`).
        name: the middleware's name (default: the class name, with a digest of the settings
            when they differ from the defaults).

    With no ``store``, originals go to the one store per process that every shortener given
    none shares, read by one ``read_original`` tool. To cut inputs and shorten outputs, prefer
    one :class:`~tokenlean.langchain.ToolOutputShorteningMiddleware` given ``inputs=``: it plans
    both stages in one call, in the planner's order, whatever the order of a stack.
    """

    state_schema = InputShorteningState

    def __init__(
        self,
        *,
        settings: InputShorteningSettings = _DEFAULTS,
        store: OriginalStore | StoreChoice | None = None,
        retrieval_tool: bool = True,
        tool_name: str = RETRIEVAL_TOOL,
        pricing: CachePricing | str = _OUTPUTS.pricing,
        offer_tool: OfferTool = _OUTPUTS.offer_tool,
        min_remaining_calls: int = _OUTPUTS.min_remaining_calls,
        name: str | None = None,
    ) -> None:
        super().__init__()
        self.policy = checks.instance(
            settings, "settings", InputShorteningSettings, "an InputShorteningSettings"
        )
        checks.identifier(tool_name, "tool_name")
        checks.flag(retrieval_tool, "retrieval_tool")
        self.stores = StoreChoice.of(store) if store is not None else shared_choice()
        self.store: OriginalStore = self.stores.default
        self.tool_name = tool_name
        tool = retrieval_tool_for(self.stores, name=tool_name)
        self.tools = [tool] if retrieval_tool else []
        readable = retrieval_tool or store is not None or tool_name != RETRIEVAL_TOOL
        self._read_back = ToolReadBack(tool_name if readable else None)
        self._views = ViewCache()  # this instance's, shared with its gate
        self._turns = Turns(self._views)
        self._gate = RetrievalGate(
            tool,
            views=self._views,
            pricing=resolve_pricing(pricing),
            counter=DEFAULT_COUNTER,
            min_remaining_calls=checks.integer(
                min_remaining_calls, "min_remaining_calls", at_least=0
            ),
            always=checks.one_of(offer_tool, "offer_tool", OFFER_TOOL) == "always",
            start_share=_OUTPUTS.start_share,
        )
        self._name = middleware_name(self, name, self.policy, _DEFAULTS)
        self._tally = Tally(InputShorteningStats)

    @property
    def name(self) -> str:
        return self._name

    never = property(lambda self: self.policy.never)

    @property
    def stats(self) -> InputShorteningStats:
        return self._tally.snapshot()

    _logger = logger
    _KEEP_FAILED = _KEEP_FAILED

    def _kept(self, planned: _Planned) -> tuple[str, Sequence[Original]]:
        return planned.scope, planned.plan.originals

    def _rewrite_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        return self._gate.hide(request)

    def _prepare(self, state: AgentState[Any]) -> _Planned | None:
        with fail_open(logger, "tool-input shortening failed; inputs left as they are"):
            return self._plan(state, state.get("messages") or [])
        return None

    def _plan(self, state: Mapping[str, Any], messages: Sequence[AnyMessage]) -> _Planned | None:
        scope = thread_scope()
        start = last_ai_index(messages)
        if start < 0 or scope is None:  # without a thread the originals could not be read
            return None
        if not messages[start].id:
            return None
        # a marker names the tool only in a request that holds it: else the input stays as it is
        # (an input's cut saves too little to pay for re-writing the cache to offer the tool:
        # offered for that, it billed 1.114 of none on Claude Code sessions)
        listed = self._gate.in_request(state, scope)
        turn = rewrite_turn(
            self._turns,
            messages,
            TurnContext(start, listed=listed),
            inputs=self.policy,
            outputs=None,
            read_back=self._read_back,
        )
        plan = turn.plan.inputs
        if not turn.edits:  # counted all the same: the gate dates every call of the thread
            accounted = self._gate.account(state, messages, saved=0, kept=0)
            return _Planned(None, plan, scope, accounted) if accounted else None
        saved = sum(c.tokens_before - c.tokens_after for c in plan.cuts)
        kept = len(plan.originals)
        accounted = self._gate.account(state, turn.sent, saved=saved, kept=kept)
        return _Planned(turn.updated[0], plan, scope, accounted)

    def _commit(self, planned: _Planned) -> dict[str, Any]:
        if planned.message is None:
            return dict(planned.accounted)
        self._tally.add(
            calls_shortened=planned.plan.calls,
            tokens_before=sum(c.tokens_before for c in planned.plan.cuts),
            tokens_after=sum(c.tokens_after for c in planned.plan.cuts),
        )
        return {"messages": [planned.message], **planned.accounted}
