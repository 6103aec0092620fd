"""``ToolOutputShorteningMiddleware``: shorten tool results at first sight, never touch them again.

In ``before_model`` it takes the tool results the model has not been sent yet (those after the
last AI message), shortens the long ones with the first-sight core
(:func:`tokenlean.shorten.firstsight.plan_first_sight`: the tool call's arguments and the calling
turn's words are the query; lines the model was already shown are pointed to instead of
repeated), and writes each back into agent state under the same message id, so the reducer
replaces it and every later call re-sends the same bytes: the provider's prompt cache keeps
hitting. A shortened message keeps ``name``, ``status``, ``artifact`` and all metadata, and is
marked in ``response_metadata["tokenlean"]`` so it is never processed again. Image and other
non-text results and already-seen results pass through.

Only the part of the transcript that is new since the previous call is read: the lines the
model was shown before it are carried from call to call per thread
(:class:`~tokenlean.langchain.helpers.PrefixMemo`), and rebuilt from the state when they are not
at hand (a restart, another worker), with the same result.

Originals are kept per thread (in memory by default, or in a LangGraph store via
:class:`~tokenlean.store.LangGraphOriginalStore`), and the middleware adds a ``read_original``
tool so the agent can fetch an original by handle, whole, by line range or by pattern. Without
a ``thread_id`` nothing is kept and the markers give line numbers only.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any

from langchain.agents.middleware.types import AgentMiddleware, AgentState, PrivateStateAttr
from langchain_core.messages import AnyMessage
from langgraph.runtime import Runtime
from typing_extensions import NotRequired, TypedDict

from tokenlean import checks
from tokenlean.langchain.adapter import apply_edit
from tokenlean.langchain.helpers import Held, PrefixMemo, last_ai_index, thread_scope, view_from
from tokenlean.langchain.retrieval import make_retrieval_tool
from tokenlean.shorten.firstsight import (
    FirstSightPlan,
    OutputShorteningPolicy,
    SeenLog,
    plan_first_sight,
)
from tokenlean.shorten.options import ShortenOptions
from tokenlean.stats import Tally
from tokenlean.store import OriginalStore, StoreChoice
from tokenlean.tokens import TokenCounter

logger = logging.getLogger(__name__)

STATE_KEY = "tokenlean_output_shortening"
_DEFAULTS = OutputShorteningPolicy()


class ShorteningTotals(TypedDict):
    """What shortening saved in this thread (summed over calls)."""

    results: int
    tokens_before: int
    tokens_after: int


def _add_totals(left: ShorteningTotals | None, right: ShorteningTotals | None) -> ShorteningTotals:
    a = left or ShorteningTotals(results=0, tokens_before=0, tokens_after=0)
    b = right or ShorteningTotals(results=0, tokens_before=0, tokens_after=0)
    return ShorteningTotals(
        results=a["results"] + b["results"],
        tokens_before=a["tokens_before"] + b["tokens_before"],
        tokens_after=a["tokens_after"] + b["tokens_after"],
    )


class ShorteningState(AgentState[Any]):
    """Agent state with the thread's shortening totals."""

    tokenlean_output_shortening: NotRequired[
        Annotated[ShorteningTotals, PrivateStateAttr, _add_totals]
    ]


@dataclass(frozen=True, slots=True)
class ShorteningStats:
    """Counters over every thread this instance served."""

    results_shortened: int = 0
    tokens_before: int = 0
    tokens_after: int = 0


@dataclass(frozen=True, slots=True)
class _Update:
    state: dict[str, Any]
    plan: FirstSightPlan
    scope: str | None
    messages: Sequence[AnyMessage]  # the plan's log covers the first ``plan.log.upto``
    held: Held[SeenLog] | None  # what was taken from the memo


class ToolOutputShorteningMiddleware(AgentMiddleware[ShorteningState, Any, Any]):
    """Shorten each long tool result once, before the model first sees it.

    Args:
        min_tokens: Results of at most this many tokens are left alone.
        max_tokens: Budget for a shortened result (overrides ``options.max_tokens``).
        options: Every other shortening setting (:class:`~tokenlean.shorten.ShortenOptions`).
        only: Shorten only these tools' results (``None``: every tool's).
        never: Never shorten these tools' results (e.g. one whose output the agent edits).
        store: Where originals are kept (a LangGraph ``BaseStore`` is wrapped). Default: the
            agent's own store (``create_agent(..., store=...)``) when it has one, else this
            process's memory (:class:`~tokenlean.store.StoreChoice`).
        retrieval_tool: Add the tool that reads originals back, named ``tool_name``.
        dedupe: Point to lines the model was already shown instead of repeating them.
        min_saving: Skip a shortening that saves less than this share of a result's tokens.
        counter: Token counter for thresholds and reports (default: a fast estimate).

    Every default is :class:`~tokenlean.shorten.firstsight.OutputShorteningPolicy`'s.
    """

    state_schema = ShorteningState

    def __init__(
        self,
        *,
        min_tokens: int = _DEFAULTS.min_tokens,
        max_tokens: int | None = None,
        options: ShortenOptions | None = None,
        only: Collection[str] | None = _DEFAULTS.only,
        never: Collection[str] = _DEFAULTS.never,
        store: OriginalStore | StoreChoice | None = None,
        retrieval_tool: bool = True,
        tool_name: str = _DEFAULTS.tool_name,
        dedupe: bool = _DEFAULTS.dedupe,
        min_saving: float = _DEFAULTS.min_saving,
        counter: TokenCounter | None = _DEFAULTS.counter,
    ) -> None:
        super().__init__()
        checks.flag(retrieval_tool, "retrieval_tool")
        opts = options if options is not None else _DEFAULTS.options
        if max_tokens is not None and isinstance(opts, ShortenOptions):
            opts = replace(opts, max_tokens=max_tokens)
        self.policy = OutputShorteningPolicy(
            min_tokens=min_tokens,
            options=opts,
            only=only,  # type: ignore[arg-type]  # normalised by the policy
            never=never,  # type: ignore[arg-type]
            dedupe=dedupe,
            min_saving=min_saving,
            tool_name=tool_name,
            counter=counter,
        )
        self.stores = StoreChoice.of(store)  # the given store, else the agent's, else memory
        self.store: OriginalStore = self.stores.default
        self.tools = [make_retrieval_tool(self.stores, name=tool_name)] if retrieval_tool else []
        self._marker_tool = tool_name if retrieval_tool else None
        self._tally = Tally(ShorteningStats)
        self._memo: PrefixMemo[SeenLog] = PrefixMemo()

    # Settings, read back from the policy (the one place they live).
    options = property(lambda self: self.policy.options)
    min_tokens = property(lambda self: self.policy.min_tokens)
    only = property(lambda self: self.policy.only)
    never = property(lambda self: self.policy.never)
    tool_name = property(lambda self: self.policy.tool_name)
    dedupe = property(lambda self: self.policy.dedupe)
    min_saving = property(lambda self: self.policy.min_saving)
    counter = property(lambda self: self.policy.counter)

    @property
    def stats(self) -> ShorteningStats:
        return self._tally.snapshot()

    def before_model(self, state: ShorteningState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        update = self._prepare(state)
        if update is None:
            return None
        try:
            store = self.stores.pick(getattr(runtime, "store", None))
            for original in update.plan.originals if update.scope is not None else ():
                store.put(update.scope or "", original)
        except Exception:  # never break the agent: send the results unshortened instead
            logger.exception("could not keep originals; tool results left as they are")
            return None
        return self._commit(update)

    async def abefore_model(
        self, state: ShorteningState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        update = self._prepare(state)
        if update is None:
            return None
        try:
            store = self.stores.pick(getattr(runtime, "store", None))
            for original in update.plan.originals if update.scope is not None else ():
                await store.aput(update.scope or "", original)
        except Exception:  # never break the agent: send the results unshortened instead
            logger.exception("could not keep originals; tool results left as they are")
            return None
        return self._commit(update)

    # -- internals -----------------------------------------------------------------------

    def _prepare(self, state: ShorteningState) -> _Update | None:
        try:
            return self._plan(state.get("messages") or ())
        except Exception:  # never break the agent
            logger.exception("tool-output shortening failed; results left as they are")
            return None

    def _plan(self, messages: Sequence[AnyMessage]) -> _Update | None:
        scope = thread_scope()
        last_ai = max(0, last_ai_index(messages))
        hit = self._memo.take(scope, messages) if self.policy.dedupe else None
        start = min(hit.value.upto, last_ai) if hit else 0 if self.policy.dedupe else last_ai
        plan = plan_first_sight(
            view_from(messages, start),
            self.policy,
            offset=start,
            log=hit.value if hit else None,
            keep_originals=scope is not None,
            retrieval_tool=self._marker_tool,
        )
        update = _Update({}, plan, scope, messages, hit)
        if not plan.edits:
            self._remember(update)
            return None
        totals = ShorteningTotals(
            results=len(plan.edits),
            tokens_before=sum(e.tokens_before for e in plan.edits),
            tokens_after=sum(e.tokens_after for e in plan.edits),
        )
        updated = [apply_edit(messages[e.index], e) for e in plan.edits]
        update.state.update({"messages": updated, STATE_KEY: totals})
        return update

    def _remember(self, update: _Update) -> None:
        """Carry the lines the model was shown to the next call of this thread."""
        log = update.plan.log
        if log is not None:
            self._memo.put(update.scope, update.messages, log.upto, log, reuse=update.held)

    def _commit(self, update: _Update) -> dict[str, Any]:
        self._remember(update)
        totals: ShorteningTotals = update.state[STATE_KEY]
        self._tally.add(
            results_shortened=totals["results"],
            tokens_before=totals["tokens_before"],
            tokens_after=totals["tokens_after"],
        )
        return update.state
