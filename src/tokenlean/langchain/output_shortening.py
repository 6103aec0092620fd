"""``ToolOutputShorteningMiddleware``: shorten tool results at first sight, never touch them again.

In ``before_model`` it takes the tool results the model has not been sent yet (those after the
last AI message), shortens the long ones with the first-sight core
(:func:`tokenlean.turn.rewrite_turn`: the tool call's arguments and the calling
turn's words are the query; lines the model was already shown are pointed to instead of
repeated), and writes each back into agent state under the same message id, so the reducer
replaces it and every later call re-sends the same bytes: the provider's prompt cache keeps
hitting. A shortened message keeps ``name``, ``status``, ``artifact`` and all metadata, and is
marked in ``response_metadata["tokenlean"]`` so it is never processed again. Image and other
non-text results and already-seen results pass through.

Only the part of the transcript that is new since the previous call is read: the lines the
model was shown before it are carried from call to call per thread
(:class:`~tokenlean.langchain._memos.PrefixMemo`), and rebuilt from the state when they are not
at hand (a restart, another worker), with the same result.

Given ``inputs``, the same call first cuts the long inputs of the calls that have just run
(their scripts and heredocs, to head and tail lines), then shortens their results seeing those
inputs as cut: :func:`~tokenlean.pipeline.plan_turn` runs both stages in that order, as it does
behind the proxy, so the order does not depend on how a stack lists its middleware.

Originals are kept per thread (in memory by default, or in a LangGraph store via
:class:`~tokenlean.langchain.store.LangGraphOriginalStore`), and the middleware adds a
``read_original`` tool so the agent can fetch an original by handle, whole, by line range or by
pattern. A marker names the tool only in a request that lists it: a result is cut only where
the agent has that way back (else it is sent whole, or as a pointer to an identical earlier
one). Without a ``thread_id`` nothing is kept, so nothing else is cut.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any

from langchain.agents.middleware.types import (
    AgentMiddleware,
    ModelRequest,
    PrivateStateAttr,
)
from langchain_core.messages import AnyMessage, BaseMessage
from typing_extensions import NotRequired, TypedDict

from tokenlean import checks
from tokenlean._failopen import fail_open
from tokenlean.cost import CachePricing
from tokenlean.langchain._adapter import Turns, ViewCache
from tokenlean.langchain._helpers import (
    KeptBeforeCommit,
    last_ai_index,
    middleware_name,
    thread_scope,
)
from tokenlean.langchain._memos import Held, PrefixMemo
from tokenlean.langchain._retrieval_gate import RetrievalGate, RetrievalState
from tokenlean.langchain.input_shortening import InputShorteningStats
from tokenlean.langchain.retrieval import read_back, shared_choice
from tokenlean.langchain.retrieval import retrieval_tool as retrieval_tool_for
from tokenlean.langchain.store import StoreChoice
from tokenlean.readback import ToolReadBack
from tokenlean.shorten import (
    InputShorteningSettings,
    OfferTool,
    OutputShorteningSettings,
    SeenLog,
    ShortenSettings,
)
from tokenlean.stats import Tally
from tokenlean.store import Original, OriginalStore
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter
from tokenlean.transcript import Edit
from tokenlean.turn import RewrittenTurn, TurnContext, rewrite_turn

__all__ = [
    "BACKOFF_KEY",
    "STATE_KEY",
    "ShorteningState",
    "ShorteningStats",
    "ShorteningTotals",
    "ToolOutputShorteningMiddleware",
]

logger = logging.getLogger(__name__)

_KEEP_FAILED = "could not keep originals; tool results left as they are"

STATE_KEY = "tokenlean_output_shortening"
BACKOFF_KEY = "tokenlean_output_shortening_backoff"
_DEFAULTS = OutputShorteningSettings()


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


def _add_levels(left: dict[str, int] | None, right: dict[str, int] | None) -> dict[str, int]:
    out = dict(left or {})
    for tool, more in (right or {}).items():
        out[tool] = out.get(tool, 0) + more
    return out


class ShorteningState(RetrievalState):
    """Agent state with the thread's shortening totals, how often the agent read each tool's
    originals back, and how many originals were kept (shared with the input shortener)."""

    tokenlean_output_shortening: NotRequired[
        Annotated[ShorteningTotals, PrivateStateAttr, _add_totals]
    ]
    tokenlean_output_shortening_backoff: NotRequired[
        Annotated[dict[str, int], PrivateStateAttr, _add_levels]
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
    turn: RewrittenTurn[BaseMessage]  # ``turn.sent``: the plan's log covers its first ``upto``
    scope: str | None
    held: Held[SeenLog] | None  # what was taken from the memo

    @property
    def originals(self) -> tuple[Original, ...]:
        """What the markers point to (kept per thread only: nothing else could read them)."""
        return self.turn.originals if self.scope is not None else ()


class ToolOutputShorteningMiddleware(
    KeptBeforeCommit[_Update, Any, Any], AgentMiddleware[ShorteningState, Any, Any]
):
    """Shorten each long tool result once, before the model first sees it.

    Args:
        min_tokens: Results of at most this many tokens are left alone.
        max_tokens: Budget for a shortened result (overrides ``options.max_tokens``).
        options: Every other shortening setting (:class:`~tokenlean.shorten.ShortenSettings`).
        only: Shorten only these tools' results (``None``: every tool's).
        never: Never shorten these tools' results (e.g. one whose output the agent edits).
        store: Where originals are kept (a LangGraph ``BaseStore`` is wrapped). Default: the
            agent's own store (``create_agent(..., store=...)``) when it has one, else this
            process's memory, shared by every shortener given no store
            (:class:`~tokenlean.langchain.store.StoreChoice`).
        retrieval_tool: Add the tool that reads originals back, named ``tool_name`` (offered
            to a thread once something was kept for it; one tool per store).
        dedupe: Point to lines the model was already shown instead of repeating them.
        min_saving: Skip a shortening that saves less than this share of a result's tokens.
        counter: Token counter for thresholds and reports (default:
            :data:`tokenlean.tokens.DEFAULT_COUNTER`).
        pricing: Whose prompt-cache prices decide when a thread's savings pay for offering
            the retrieval tool (``"anthropic"``, ``"openai"``, ``"none"`` or a
            :class:`~tokenlean.cost.CachePricing`).
        offer_tool: ``"when_it_pays"`` (a thread is offered ``read_original`` from its first
            call when the schema is at most ``start_share`` of that prompt, else from the first
            call whose cuts save more than re-writing the cached prompt for the tool costs, or
            at a call whose cache is cold anyway; a marker names the tool only in a request
            that lists it, so until then only exact repeats are cut) or ``"always"``.
        start_share: The share of the first prompt under which the tool's schema is negligible.
        min_remaining_calls: The later calls the tool's schema is charged for, at least.
        inputs: Also cut the long inputs of the calls that have run, before their results are
            shortened (:class:`~tokenlean.shorten.InputShorteningSettings`; ``None``: inputs
            are left alone, as without :class:`ToolInputShorteningMiddleware`). Needs a
            ``thread_id``, as the originals must be readable.
        name: The middleware's name (default: the class name, with a digest of the settings
            when they differ from the defaults, so differently set instances can be combined).

    When the agent reads a tool's original back, later results of that tool are shortened less
    (and after two read-backs, not at all). Every shortening default is
    :class:`~tokenlean.shorten.OutputShorteningSettings`'s.
    """

    state_schema = ShorteningState

    def __init__(
        self,
        *,
        min_tokens: int = _DEFAULTS.min_tokens,
        max_tokens: int | None = None,
        options: ShortenSettings | None = None,
        only: Collection[str] | None = _DEFAULTS.only,
        never: Collection[str] = _DEFAULTS.never,
        store: OriginalStore | StoreChoice | None = None,
        retrieval_tool: bool = True,
        tool_name: str = _DEFAULTS.tool_name,
        dedupe: bool = _DEFAULTS.dedupe,
        min_saving: float = _DEFAULTS.min_saving,
        counter: TokenCounter | None = _DEFAULTS.counter,
        pricing: CachePricing | str = _DEFAULTS.pricing,
        offer_tool: OfferTool = _DEFAULTS.offer_tool,
        start_share: float = _DEFAULTS.start_share,
        min_remaining_calls: int = _DEFAULTS.min_remaining_calls,
        inputs: InputShorteningSettings | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__()
        checks.flag(retrieval_tool, "retrieval_tool")
        if inputs is not None and not isinstance(inputs, InputShorteningSettings):
            raise checks.ArgumentTypeError(
                f"inputs must be InputShorteningSettings or None, got {checks.described(inputs)}"
            )
        self.inputs = inputs
        opts = options if options is not None else _DEFAULTS.options
        if max_tokens is not None and isinstance(opts, ShortenSettings):
            opts = replace(opts, max_tokens=max_tokens)
        self.policy = OutputShorteningSettings(
            min_tokens=min_tokens,
            options=opts,
            only=only,  # type: ignore[arg-type]  # normalised by the policy
            never=never,  # type: ignore[arg-type]
            dedupe=dedupe,
            min_saving=min_saving,
            tool_name=tool_name,
            counter=counter,
            pricing=pricing,  # type: ignore[arg-type]  # a preset name is resolved by the policy
            offer_tool=offer_tool,
            start_share=start_share,
            min_remaining_calls=min_remaining_calls,
        )
        self.stores = StoreChoice.of(store) if store is not None else shared_choice()
        self.store: OriginalStore = self.stores.default
        self._wire_retrieval(retrieval_tool)
        named = (self.policy, inputs) if inputs is not None else self.policy
        self._name = middleware_name(self, name, named, _DEFAULTS)
        self._tally = Tally(ShorteningStats)
        self._cut = Tally(InputShorteningStats)
        self._memo: PrefixMemo[SeenLog] = PrefixMemo()

    def _wire_retrieval(self, offered: bool) -> None:
        """The ``read_original`` tool, how markers name it, and the gate that decides when a
        thread is offered it (the rule itself is the core's, :mod:`tokenlean.cost`)."""
        policy = self.policy
        tool = retrieval_tool_for(self.stores, name=policy.tool_name)
        self.tools = [tool] if offered else []
        self._read_back = ToolReadBack(policy.tool_name if offered else None)
        self._views = ViewCache()  # this instance's, shared with its gate
        self._turns = Turns(self._views)
        self._gate = RetrievalGate(
            tool,
            views=self._views,
            pricing=policy.pricing,
            counter=policy.counter or DEFAULT_COUNTER,
            min_remaining_calls=policy.min_remaining_calls,
            always=policy.offer_tool == "always",
            start_share=policy.start_share,
        )

    @property
    def name(self) -> str:
        return self._name

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

    @property
    def input_stats(self) -> InputShorteningStats:
        """What cutting inputs saved (all zero without ``inputs``)."""
        return self._cut.snapshot()

    _logger = logger
    _KEEP_FAILED = _KEEP_FAILED

    def _kept(self, update: _Update) -> tuple[str, Sequence[Original]]:
        return update.scope or "", update.originals

    def _rewrite_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        return self._gate.hide(request)

    # -- internals -----------------------------------------------------------------------

    def _prepare(self, state: ShorteningState) -> _Update | None:
        with fail_open(logger, "tool-output shortening failed; results left as they are"):
            return self._plan(state, state.get("messages") or ())
        return None

    def _plan(self, state: Mapping[str, Any], messages: Sequence[AnyMessage]) -> _Update | None:
        scope = thread_scope()
        last_ai = max(0, last_ai_index(messages))
        hit = self._memo.take(scope, messages) if self.policy.dedupe else None
        start = min(hit.value.upto, last_ai) if hit else 0 if self.policy.dedupe else last_ai
        read = Counter(read_back(messages[last_ai:], self.policy.tool_name))
        context = TurnContext(
            start,
            log=hit.value if hit else None,
            backoff=_add_levels(state.get(BACKOFF_KEY), dict(read)),
            listed=scope is not None and self._gate.in_request(state, scope),
        )
        gate = self._gate
        turn = rewrite_turn(  # the core plans; the tool joins where the gate's measure pays
            self._turns,
            messages,
            context,
            inputs=self.inputs if messages and messages[last_ai].id else None,
            outputs=self.policy,
            read_back=self._read_back,
            offer_pays=(lambda sent, extra: gate.offer_now_pays(state, sent, extra=extra))
            if scope is not None
            else None,
        )
        update = _Update({BACKOFF_KEY: dict(read)} if read else {}, turn, scope, hit)
        if scope is not None:  # counted even with nothing cut now: the tool may come to pay
            chosen = turn.chosen
            account = gate.account(
                state,
                turn.sent,
                saved=turn.saved,
                kept=len(turn.originals),
                offer=chosen.offer,
                forgone=chosen.forgone,
            )
            update.state.update(account)
        if not turn.edits:
            self._remember(update)
            return update if update.state else None
        update.state["messages"] = list(turn.updated)
        if turn.plan.outputs.edits:
            update.state[STATE_KEY] = _totals(turn.plan.outputs.edits)
        return update

    def _remember(self, update: _Update) -> None:
        """Carry the lines the model was shown to the next call of this thread."""
        log = update.turn.plan.outputs.log
        if log is not None:
            self._memo.put(update.scope, update.turn.sent, log.upto, log, reuse=update.held)

    def _commit(self, update: _Update) -> dict[str, Any]:
        self._remember(update)
        cut = update.turn.plan.inputs
        if cut.edits:
            self._cut.add(
                calls_shortened=cut.calls,
                tokens_before=sum(c.tokens_before for c in cut.cuts),
                tokens_after=sum(c.tokens_after for c in cut.cuts),
            )
        if STATE_KEY not in update.state:
            return update.state
        totals: ShorteningTotals = update.state[STATE_KEY]
        self._tally.add(
            results_shortened=totals["results"],
            tokens_before=totals["tokens_before"],
            tokens_after=totals["tokens_after"],
        )
        return update.state


def _totals(edits: Sequence[Edit]) -> ShorteningTotals:
    return ShorteningTotals(
        results=len(edits),
        tokens_before=sum(e.tokens_before for e in edits),
        tokens_after=sum(e.tokens_after for e in edits),
    )
