"""``TokenSavingMiddleware``: the reference API (same names, same defaults), without its defects.

Two levers, plus an opt-in third: head+tail compression of old tool outputs, an early-exit nudge
when a ``signals_fn`` reports a loop, and word-level compression of older messages with a
:data:`~tokenlean.words.WordClassifier`.

Where compression happens: *request-only, persisted*. ``before_model`` computes each compression
once, from the original text, and stores it in agent state (``token_saving_compressed``, keyed by
message id and tied to a digest of the original content); ``wrap_model_call`` swaps the stored
text into the request. So the state keeps every message whole (other middleware, tools and the
user still see the originals), each message copy keeps every other field (``name``, ``status``,
``artifact``, metadata, usage), and the bytes sent for a message stay identical from call to call
and across processes, even with a non-deterministic classifier, until its stage changes.

Cache cost: a compression rewrites a message the model has already been sent, so the call that
first sends it breaks the provider's prefix cache from that message on. With the defaults only
head+tail is on and a message changes once (when it leaves the ``keep_recent_tool_messages``
window, near the end of the prompt): the same bytes, calls and breaks as the reference. Tiered
word compression changes a message twice more (at ``perplexity_recent_cutoff`` and, deep in the
prompt, at ``perplexity_mid_cutoff`` calls old), which on replayed runs costs more than it saves.
``compress_once=True`` computes each message's compression once, with every lever, when it has
left the recent window, and never touches it again; the computed compressions are written into
the prompt in batches, each when it pays back within ``payback_calls`` calls (see
:mod:`tokenlean.compress_plan`), so each output causes at most one break and usually shares it.
``tokenlean replay -s token-saving -s token-saving-words -s token-saving-once`` shows the cost.

The nudge is appended (no byte already sent changes) at most once per episode: an episode is one
agent invocation, and the latch lives in agent state so a checkpointer persists it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, cast

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ContextT,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
    ResponseT,
)
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime
from typing_extensions import NotRequired

from tokenlean.compress import (
    DEFAULT_COMPRESS_THRESHOLD_CHARS,
    DEFAULT_HEAD_KEEP_CHARS,
    DEFAULT_KEEP_RECENT_TOOL_MESSAGES,
    DEFAULT_PAYBACK_CALLS,
    DEFAULT_PERPLEXITY_KEEP_RATIO_MID,
    DEFAULT_PERPLEXITY_KEEP_RATIO_OLD,
    DEFAULT_PERPLEXITY_MID_CUTOFF,
    DEFAULT_PERPLEXITY_MIN_CONTENT_WORDS,
    DEFAULT_PERPLEXITY_RECENT_CUTOFF,
    DEFAULT_PERPLEXITY_WINDOW_WORDS,
    DEFAULT_TAIL_KEEP_CHARS,
    CompressionPolicy,
    TokenSavingStats,
    content_digest,
)
from tokenlean.compress_plan import CompressedEntry, plan_compressions
from tokenlean.early_exit import (
    DEFAULT_EARLY_EXIT_MIN_CALL_INDEX,
    DEFAULT_EARLY_EXIT_TEXT,
    SignalsFn,
    check_early_exit,
    loop_detected,
)
from tokenlean.langchain.adapter import replace_content, role_of, to_view
from tokenlean.loops import Step, build_steps
from tokenlean.tokens import TokenCounter, default_counter
from tokenlean.transcript import INJECTED_ID_PREFIX, Content, Message
from tokenlean.words import WordClassifier

logger = logging.getLogger(__name__)

COMPRESSED_KEY = "token_saving_compressed"
NUDGED_KEY = "token_saving_nudged"


def _merge_entries(
    left: dict[str, CompressedEntry] | None, right: dict[str, CompressedEntry] | None
) -> dict[str, CompressedEntry]:
    return {**(left or {}), **(right or {})}


class TokenSavingState(AgentState[ResponseT]):
    """Agent state with the stored compressions and the nudge latch (private to the middleware)."""

    token_saving_compressed: NotRequired[
        Annotated[dict[str, CompressedEntry], PrivateStateAttr, _merge_entries]
    ]
    token_saving_nudged: NotRequired[Annotated[bool, PrivateStateAttr]]


def build_steps_from_messages(messages: Sequence[BaseMessage]) -> list[Step]:
    """The step dicts a ``signals_fn`` receives, one per tool call (or per AI message without).

    Tool calls are paired with their results by ``tool_call_id``, several per AI message too.
    """
    return build_steps(to_view(messages))


def _plan_content(raw: object) -> Content:
    """Message content as the planner reads it (what :func:`to_view` gives, for less work)."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list):
        return tuple(b if isinstance(b, Mapping) else {"type": "text", "text": str(b)} for b in raw)
    return str(raw)


def _plan_view(messages: Sequence[BaseMessage]) -> list[Message]:
    """Role, id and content of each message: all the planner reads."""
    return [Message(role_of(m), _plan_content(m.content), m.id) for m in messages]


def apply_compressions(
    messages: Sequence[AnyMessage], entries: Mapping[str, CompressedEntry]
) -> list[AnyMessage]:
    """``messages`` with stored compressions swapped in (copies keep every other field).

    An entry applies only to a message whose content still has the digest it was made from.
    """
    out = list(messages)
    for index, message in enumerate(messages):
        entry = entries.get(message.id) if isinstance(message.id, str) else None
        if entry is None or entry["content"] is None or not entry["applied"]:
            continue
        if content_digest(_plan_content(message.content)) != entry["source"]:
            continue
        content = entry["content"]
        copy = replace_content(message, content if isinstance(content, str) else tuple(content))
        out[index] = cast("AnyMessage", copy)  # model_copy keeps the message's class
    return out


class TokenSavingMiddleware(AgentMiddleware[TokenSavingState[ResponseT], ContextT, ResponseT]):
    """Compress old tool outputs (and, opt-in, older text word by word); nudge a looping agent.

    Every parameter of the reference, with its name and default, plus ``compress_once`` (one
    rewrite per message, written in batches that pay back within ``payback_calls`` calls; see
    the module docs) and ``token_counter`` (for token stats; the exact o200k counter when its
    vocabulary is local, else the estimate). The compression settings are read back from
    :attr:`policy`. Failures are logged and swallowed: the agent loop is never interrupted.
    """

    state_schema = TokenSavingState

    def __init__(
        self,
        *,
        compress_threshold_chars: int = DEFAULT_COMPRESS_THRESHOLD_CHARS,
        head_keep_chars: int = DEFAULT_HEAD_KEEP_CHARS,
        tail_keep_chars: int = DEFAULT_TAIL_KEEP_CHARS,
        keep_recent_tool_messages: int = DEFAULT_KEEP_RECENT_TOOL_MESSAGES,
        early_exit_min_call_index: int = DEFAULT_EARLY_EXIT_MIN_CALL_INDEX,
        early_exit_text: str = DEFAULT_EARLY_EXIT_TEXT,
        signals_fn: SignalsFn | None = None,
        enable_compression: bool = True,
        enable_early_exit: bool = True,
        enable_perplexity_compression: bool = False,
        perplexity_classifier: WordClassifier | None = None,
        perplexity_recent_cutoff: int = DEFAULT_PERPLEXITY_RECENT_CUTOFF,
        perplexity_mid_cutoff: int = DEFAULT_PERPLEXITY_MID_CUTOFF,
        perplexity_keep_ratio_mid: float = DEFAULT_PERPLEXITY_KEEP_RATIO_MID,
        perplexity_keep_ratio_old: float = DEFAULT_PERPLEXITY_KEEP_RATIO_OLD,
        perplexity_window_words: int = DEFAULT_PERPLEXITY_WINDOW_WORDS,
        perplexity_min_content_words: int = DEFAULT_PERPLEXITY_MIN_CONTENT_WORDS,
        compress_once: bool = False,
        payback_calls: int = DEFAULT_PAYBACK_CALLS,
        token_counter: TokenCounter | None = None,
    ) -> None:
        super().__init__()
        if enable_perplexity_compression and perplexity_classifier is None:
            logger.warning("enable_perplexity_compression=True without perplexity_classifier: off")
        self.policy = CompressionPolicy(
            compress_threshold_chars=compress_threshold_chars,
            head_keep_chars=head_keep_chars,
            tail_keep_chars=tail_keep_chars,
            keep_recent_tool_messages=keep_recent_tool_messages,
            enable_compression=enable_compression,
            classifier=perplexity_classifier if enable_perplexity_compression else None,
            perplexity_recent_cutoff=perplexity_recent_cutoff,
            perplexity_mid_cutoff=perplexity_mid_cutoff,
            perplexity_keep_ratio_mid=perplexity_keep_ratio_mid,
            perplexity_keep_ratio_old=perplexity_keep_ratio_old,
            perplexity_window_words=perplexity_window_words,
            perplexity_min_content_words=perplexity_min_content_words,
            compress_once=compress_once,
            payback_calls=payback_calls,
        )
        check_early_exit(early_exit_min_call_index, early_exit_text, signals_fn)
        self.early_exit_min_call_index = early_exit_min_call_index
        self.early_exit_text = early_exit_text
        self.signals_fn = signals_fn
        self.enable_early_exit = enable_early_exit
        self.enable_perplexity_compression = enable_perplexity_compression
        self.perplexity_classifier = perplexity_classifier
        self.token_counter: TokenCounter = token_counter or default_counter()
        self.stats = TokenSavingStats()

    @property
    def _compressing(self) -> bool:
        return self.policy.enable_compression or self.policy.classifier is not None

    @property
    def _blocking(self) -> bool:
        """Whether ``before_model`` may call out (a classifier or a ``signals_fn``)."""
        return self.policy.classifier is not None or self.signals_fn is not None

    # -- hooks (sync and async share the helpers below) -----------------------------------

    def before_agent(
        self, state: TokenSavingState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        return self._start_episode(state)

    async def abefore_agent(
        self, state: TokenSavingState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        return self._start_episode(state)

    def before_model(
        self, state: TokenSavingState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        return self._before_model(state)

    async def abefore_model(
        self, state: TokenSavingState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        if self._blocking:  # a classifier or signals_fn may block: keep the event loop free
            return await asyncio.to_thread(self._before_model, state)
        return self._before_model(state)

    def wrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], ModelResponse[ResponseT]],
    ) -> ModelResponse[ResponseT]:
        return handler(self._rewrite(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], Awaitable[ModelResponse[ResponseT]]],
    ) -> ModelResponse[ResponseT]:
        return await handler(self._rewrite(request))

    # -- helpers ---------------------------------------------------------------------------

    def _start_episode(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        return {NUDGED_KEY: False} if state.get(NUDGED_KEY) else None

    def _before_model(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        messages: list[AnyMessage] = list(state.get("messages") or [])
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
        if not self._compressing:
            return {}
        try:
            view = _plan_view(messages)
            plan = plan_compressions(view, stored, self.policy, self.token_counter)
        except Exception:
            logger.warning(
                "token saving: compression failed; messages left as they are", exc_info=True
            )
            return {}
        if any(plan.stats.values()):
            self.stats.add(**plan.stats)
        return plan.updates

    def _nudge(self, messages: list[AnyMessage]) -> HumanMessage | None:
        if not self.enable_early_exit or self.signals_fn is None:
            return None
        if sum(isinstance(m, AIMessage) for m in messages) < self.early_exit_min_call_index:
            return None
        try:
            signals = self.signals_fn(build_steps_from_messages(messages))
        except Exception:
            logger.warning("token saving: signals_fn failed; no nudge", exc_info=True)
            return None
        if not loop_detected(signals):
            return None
        self.stats.add(early_exits=1)
        return HumanMessage(
            content=self.early_exit_text, id=f"{INJECTED_ID_PREFIX}early-exit-{len(messages)}"
        )

    def _rewrite(self, request: ModelRequest[ContextT]) -> ModelRequest[ContextT]:
        try:
            state: Any = request.state
            entries = state.get(COMPRESSED_KEY) if isinstance(state, Mapping) else None
            if not isinstance(entries, Mapping) or not entries:
                return request
            return request.override(messages=apply_compressions(request.messages, entries))
        except Exception:
            logger.warning("token saving: could not apply compressions", exc_info=True)
            return request
