"""``TokenSavingMiddleware``: the reference API (same names, same defaults), without its defects.

Two levers, plus an opt-in third: head+tail compression of old tool outputs, an early-exit nudge
when a ``signals_fn`` reports a loop, and word-level compression of older messages with a
:data:`~tokenlean.token_saving._words.WordClassifier`.

Where compression happens: *request-only, persisted*. ``before_model`` computes each compression
once, from the original text, and stores it in agent state (``tokenlean_token_saving_compressed``,
keyed by message id and tied to a digest of the original content); ``wrap_model_call`` swaps the
stored text into the request (as :class:`~tokenlean.transcript.Edit` objects applied by
:func:`~tokenlean.langchain._adapter.apply_edits`). So the state keeps every message whole (other
middleware, tools and the user still see the originals), each message copy keeps every other
field (``name``, ``status``, ``artifact``, metadata, usage), and the bytes sent for a message stay
identical from call to call and across processes, even with a non-deterministic classifier, until
its stage changes. Messages whose stage is final are *settled*: their sent form is carried from
call to call per thread, so a long run is not re-read on every call.

Cache cost: a compression rewrites a message the model has already been sent, so the call that
first sends it breaks the provider's prefix cache from that message on. By default
(``compress_once=True``) each message's compression is computed once, with every lever, when it
has left the recent window, and written into the prompt on that call only if it pays back
within the calls the run is expected to have left (half the calls made so far, at most
``payback_calls``) under the model's prices (``pricing``; :mod:`tokenlean.token_saving._plan`);
else the message stays whole for good, since the cost of re-writing what follows it only
grows. Replayed on every source under each current price table, that bills at most what no
middleware bills (``benchmarks/price_tables.md``). ``compress_once=False`` is the reference's
behaviour: the same bytes, calls and breaks (a message changes when it leaves the
``keep_recent_tool_messages`` window; tiered word compression changes it twice more, deep in
the prompt), which on replayed runs bills up to 1.5x no middleware on some sources.
``tokenlean replay -s token-saving -s token-saving-words -s token-saving-once`` shows the cost.

The nudge is appended (no byte already sent changes) at most once per episode: an episode is one
agent invocation, and the latch lives in agent state so a checkpointer persists it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import ChainMap
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ContextT,
    ModelRequest,
    PrivateStateAttr,
    ResponseT,
)
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime
from typing_extensions import NotRequired

from tokenlean import checks
from tokenlean._failopen import fail_open
from tokenlean.cost import CachePricing
from tokenlean.langchain._adapter import ViewCache, apply_edit, apply_edits, to_view, views_of
from tokenlean.langchain._helpers import (
    RequestRewriter,
    Update,
    merge_records,
    state_hooks,
    thread_scope,
)
from tokenlean.langchain._memos import PrefixMemo, StepMemo
from tokenlean.loop_guard import Step, build_steps
from tokenlean.stats import Tally
from tokenlean.token_saving import (
    CompressedEntry,
    CompressionSettings,
    EarlyExitPolicy,
    SignalsFn,
    TokenSavingStats,
    WordClassifier,
    compression_edits,
    loop_detected,
    plan_compressions,
    sent_tokens,
)
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter, memoized
from tokenlean.transcript import INJECTED_ID_PREFIX

__all__ = [
    "COMPRESSED_KEY",
    "NUDGED_KEY",
    "TokenSavingMiddleware",
    "TokenSavingState",
    "build_steps_from_messages",
]

logger = logging.getLogger(__name__)

COMPRESSED_KEY = "tokenlean_token_saving_compressed"
NUDGED_KEY = "tokenlean_token_saving_nudged"
_POLICY = CompressionSettings()
_EARLY = EarlyExitPolicy()


class TokenSavingState(AgentState[ResponseT]):
    """Agent state with the stored compressions and the nudge latch (private to the middleware)."""

    tokenlean_token_saving_compressed: NotRequired[
        Annotated[dict[str, CompressedEntry], PrivateStateAttr, merge_records]
    ]
    tokenlean_token_saving_nudged: NotRequired[Annotated[bool, PrivateStateAttr]]


def build_steps_from_messages(messages: Sequence[BaseMessage]) -> list[Step]:
    """The step dicts a ``signals_fn`` receives, one per tool call (or per AI message without).

    Tool calls are paired with their results by ``tool_call_id``, several per AI message too.
    """
    return build_steps(to_view(messages))


@dataclass(slots=True)
class _Settled:
    """The settled messages of a thread: how many tokens they are sent as, and their sent form."""

    tokens: int
    sent: list[AnyMessage]


def _classifier(enabled: bool, classifier: WordClassifier | None) -> WordClassifier | None:
    """The word classifier the middleware's settings turn on (``None``: word compression off),
    with a warning for the reference's silent slip of enabling it without one."""
    checks.flag(enabled, "enable_perplexity_compression")
    if classifier is not None:
        checks.function(classifier, "perplexity_classifier")
    if enabled and classifier is None:
        logger.warning("enable_perplexity_compression=True without perplexity_classifier: off")
    return classifier if enabled else None


class TokenSavingMiddleware(
    RequestRewriter[ContextT, ResponseT],
    AgentMiddleware[TokenSavingState[ResponseT], ContextT, ResponseT],
):
    """Compress old tool outputs (and, opt-in, older text word by word); nudge a looping agent.

    Every parameter of the reference, with its name and default, plus ``compress_once`` (on by
    default: a rewrite of a sent message only where it pays back under ``pricing``; ``False``:
    the reference's behaviour; see the module docs) and ``token_counter`` (for token stats;
    the exact o200k counter when its vocabulary is local, else the estimate). The settings are
    read back from :attr:`policy` and :attr:`early_exit`, where every default lives. Failures
    are logged and swallowed: the agent loop is never interrupted.
    """

    state_schema = TokenSavingState

    def __init__(
        self,
        *,
        compress_threshold_chars: int = _POLICY.compress_threshold_chars,
        head_keep_chars: int = _POLICY.head_keep_chars,
        tail_keep_chars: int = _POLICY.tail_keep_chars,
        keep_recent_tool_messages: int = _POLICY.keep_recent_tool_messages,
        early_exit_min_call_index: int = _EARLY.min_call_index,
        early_exit_text: str = _EARLY.text,
        signals_fn: SignalsFn | None = _EARLY.signals_fn,
        enable_compression: bool = _POLICY.enable_compression,
        enable_early_exit: bool = True,
        enable_perplexity_compression: bool = False,
        perplexity_classifier: WordClassifier | None = _POLICY.classifier,
        perplexity_recent_cutoff: int = _POLICY.perplexity_recent_cutoff,
        perplexity_mid_cutoff: int = _POLICY.perplexity_mid_cutoff,
        perplexity_keep_ratio_mid: float = _POLICY.perplexity_keep_ratio_mid,
        perplexity_keep_ratio_old: float = _POLICY.perplexity_keep_ratio_old,
        perplexity_window_words: int = _POLICY.perplexity_window_words,
        perplexity_min_content_words: int = _POLICY.perplexity_min_content_words,
        compress_once: bool = _POLICY.compress_once,
        payback_calls: int = _POLICY.payback_calls,
        pricing: CachePricing | str = _POLICY.pricing,
        token_counter: TokenCounter | None = None,
    ) -> None:
        super().__init__()
        checks.flag(enable_early_exit, "enable_early_exit")
        classifier = _classifier(enable_perplexity_compression, perplexity_classifier)
        self.policy = CompressionSettings(
            compress_threshold_chars=compress_threshold_chars,
            head_keep_chars=head_keep_chars,
            tail_keep_chars=tail_keep_chars,
            keep_recent_tool_messages=keep_recent_tool_messages,
            enable_compression=enable_compression,
            classifier=classifier,
            perplexity_recent_cutoff=perplexity_recent_cutoff,
            perplexity_mid_cutoff=perplexity_mid_cutoff,
            perplexity_keep_ratio_mid=perplexity_keep_ratio_mid,
            perplexity_keep_ratio_old=perplexity_keep_ratio_old,
            perplexity_window_words=perplexity_window_words,
            perplexity_min_content_words=perplexity_min_content_words,
            compress_once=compress_once,
            payback_calls=payback_calls,
            pricing=pricing,  # type: ignore[arg-type]  # a preset name is resolved by the policy
        )
        self.early_exit = EarlyExitPolicy(
            min_call_index=early_exit_min_call_index, text=early_exit_text, signals_fn=signals_fn
        )
        self.enable_early_exit = enable_early_exit
        self.enable_perplexity_compression = enable_perplexity_compression
        self.perplexity_classifier = perplexity_classifier
        self._start(token_counter)

    def _start(self, token_counter: TokenCounter | None) -> None:
        """The counter for token stats, and the per-instance memos and stats (empty)."""
        if token_counter is not None:
            checks.token_counter(token_counter, "token_counter")
        self.token_counter: TokenCounter = token_counter or DEFAULT_COUNTER
        self._counter = memoized(self.token_counter)
        self._tally = Tally(TokenSavingStats)
        self._settled: PrefixMemo[_Settled] = PrefixMemo()
        self._views = ViewCache()
        self._steps = StepMemo(self._views)

    early_exit_min_call_index = property(lambda self: self.early_exit.min_call_index)
    early_exit_text = property(lambda self: self.early_exit.text)
    signals_fn = property(lambda self: self.early_exit.signals_fn)

    @property
    def stats(self) -> TokenSavingStats:
        """The reference's counters over every call so far (a snapshot)."""
        return self._tally.snapshot()

    @property
    def _compressing(self) -> bool:
        return self.policy.enable_compression or self.policy.classifier is not None

    @property
    def _blocking(self) -> bool:
        """Whether ``before_model`` may call out (a classifier or a ``signals_fn``)."""
        return self.policy.classifier is not None or self.signals_fn is not None

    # -- hooks (sync and async share the helpers below) -----------------------------------

    before_agent, abefore_agent = state_hooks("_start_episode")

    def before_model(
        self, state: TokenSavingState[ResponseT], runtime: Runtime[ContextT]
    ) -> Update:
        return self._before_model(state)

    async def abefore_model(
        self, state: TokenSavingState[ResponseT], runtime: Runtime[ContextT]
    ) -> Update:
        if self._blocking:  # a classifier or signals_fn may block: keep the event loop free
            return await asyncio.to_thread(self._before_model, state)
        return self._before_model(state)

    # -- helpers ---------------------------------------------------------------------------

    def _start_episode(self, state: Mapping[str, Any]) -> Update:
        return {NUDGED_KEY: False} if state.get(NUDGED_KEY) else None

    def _before_model(self, state: Mapping[str, Any]) -> Update:
        messages: list[AnyMessage] = state.get("messages") or []
        update: dict[str, Any] = {}
        entries = self._plan(messages, state.get(COMPRESSED_KEY) or {})
        if entries:
            update[COMPRESSED_KEY] = entries
        if not state.get(NUDGED_KEY) and (nudge := self._nudge(messages)) is not None:
            update["messages"] = [nudge]
            update[NUDGED_KEY] = True
        return update or None

    def _plan(
        self, messages: list[AnyMessage], stored: Mapping[str, CompressedEntry]
    ) -> dict[str, CompressedEntry]:
        """New entries for the messages not yet settled; the settled ones move to the memo."""
        if not self._compressing:
            return {}
        scope = thread_scope()
        with fail_open(
            logger,
            "token saving: compression failed; messages left as they are",
            level=logging.WARNING,
        ) as guard:
            hit = self._settled.take(scope, messages)
            start, settled = (hit.n, hit.value) if hit else (0, _Settled(0, []))
            view = views_of(messages, start, cache=self._views)
            plan = plan_compressions(
                view, stored, self.policy, self._counter, before=settled.tokens
            )
            done = view[: plan.settled]
            # Updates first, then the stored entries (only read): no copy of every entry.
            merged = ChainMap(plan.updates, cast("MutableMapping[str, CompressedEntry]", stored))
            edits = compression_edits(done, merged, offset=start)
            settled.sent.extend(messages[start : start + plan.settled])
            for edit in edits:  # settled messages are sent with their final compression
                settled.sent[edit.index] = apply_edit(messages[edit.index], edit)
            settled.tokens += sent_tokens(done, merged, self._counter)
            self._settled.put(scope, messages, start + plan.settled, settled, reuse=hit)
        if guard.failed:
            return {}
        if any(plan.stats.values()):
            self._tally.add(**plan.stats)
        return plan.updates

    def _nudge(self, messages: list[AnyMessage]) -> HumanMessage | None:
        if not self.enable_early_exit or self.signals_fn is None:
            return None
        with fail_open(
            logger, "token saving: signals_fn failed; no nudge", level=logging.WARNING
        ) as guard:
            scan = self._steps.scan(messages)
            if scan.turns < self.early_exit_min_call_index:
                return None
            signals = self.signals_fn(list(scan.steps))
        if guard.failed:
            return None
        if not loop_detected(signals):
            return None
        self._tally.add(early_exits=1)
        return HumanMessage(
            content=self.early_exit_text, id=f"{INJECTED_ID_PREFIX}early-exit-{len(messages)}"
        )

    def _rewrite_request(self, request: ModelRequest[ContextT]) -> ModelRequest[ContextT]:
        with fail_open(logger, "token saving: could not apply compressions", level=logging.WARNING):
            state: Any = request.state
            entries = state.get(COMPRESSED_KEY) if isinstance(state, Mapping) else None
            if not isinstance(entries, Mapping) or not entries:
                return request
            return request.override(messages=self._sent(request.messages, entries))
        return request

    def _sent(
        self, messages: list[AnyMessage], entries: Mapping[str, CompressedEntry]
    ) -> list[AnyMessage]:
        """``messages`` as they are sent: the settled part from the memo, the rest edited now."""
        scope = thread_scope()
        hit = self._settled.take(scope, messages)
        start = hit.n if hit else 0
        rest = compression_edits(views_of(messages, start, cache=self._views), entries)
        sent = [*(hit.value.sent if hit else ()), *apply_edits(messages[start:], rest)]
        if hit:  # taken only to read it
            self._settled.put(scope, messages, start, hit.value, reuse=hit)
        return sent
