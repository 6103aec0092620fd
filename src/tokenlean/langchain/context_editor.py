"""Clear old tool results from what the model is sent, in cache-friendly batches.

Only the request changes: the transcript in state keeps every result, so checkpoints, streamed
events and a later summary still see them (and ``read_original`` reads a cleared result back from
there). Which results are cleared is kept in agent state (``tokenlean_context_editor``: tool call
id -> the exact placeholder sent), so a checkpointer persists it and every later call sends the
same bytes for them. The decisions are made by the framework-free core,
:mod:`tokenlean.context_editor`, which documents the cache-aware model; the request is rewritten
with its edits through :func:`~tokenlean.langchain._adapter.apply_edits`.

Below the trigger only what is new since the previous call is read: the request's size and its
sent form are carried from call to call per thread.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Annotated, Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse, PrivateStateAttr
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.types import Command
from typing_extensions import NotRequired

from tokenlean import checks
from tokenlean._failopen import fail_open
from tokenlean.context_editor import (
    ClearedRecord,
    Clearing,
    ContextEdit,
    ContextEditorSettings,
    Mode,
    PlaceholderFn,
    RequestLedger,
    TokenEstimator,
    clearing_edits,
    plan_ledger,
    request_estimator,
)
from tokenlean.cost import CachePricing
from tokenlean.langchain._adapter import ViewCache, apply_edit, apply_edits, views_of
from tokenlean.langchain._helpers import SchemaCache, merge_records, thread_scope
from tokenlean.langchain._memos import PrefixMemo
from tokenlean.tokens import (
    DEFAULT_COUNTER,
    TokenCounter,
    count_request,
    memoized,
)

__all__ = ["STATE_KEY", "ContextEditorMiddleware", "ContextEditorState"]

logger = logging.getLogger(__name__)

STATE_KEY = "tokenlean_context_editor"
_DEFAULTS = ContextEditorSettings()


class ContextEditorState(AgentState[Any]):
    """Agent state with the results cleared so far (tool call id -> how it is sent now); the
    cleared set only grows, an update holding the newly cleared results alone."""

    tokenlean_context_editor: NotRequired[
        Annotated[dict[str, ClearedRecord], PrivateStateAttr, merge_records]
    ]


@dataclass(frozen=True, slots=True)
class _Prepared:
    request: ModelRequest[Any]
    update: dict[str, ClearedRecord] | None  # the new cleared set when it grew


@dataclass(frozen=True, slots=True)
class _Fixed:
    """The tokens of a system prompt and tool list, and the tools' schemas."""

    key: tuple[object, ...]  # the system prompt and the tools' ids
    tokens: int
    tools: list[Any]  # held, so the ids in ``key`` are never another tool's
    schemas: list[dict[str, Any]] | None
    mutable: bool = False  # a tool is a mapping, whose schema is read again on each call


@dataclass(slots=True)
class _Thread:
    """A thread's request so far: the ledger the core plans on, the messages as sent, and the
    cleared set last read from state (read again only when the state holds a new one)."""

    ledger: RequestLedger
    sent: list[AnyMessage]
    raw: object = None
    cleared: Mapping[str, Clearing] = field(default_factory=dict)
    added: tuple[str, ...] = ()
    size: int = 0

    def read(self, raw: object) -> Mapping[str, Clearing]:
        """The cleared set in state, parsed again only when it is not the one last written."""
        if raw is None or (raw is not self.raw and not self._grown_to(raw)):
            self.cleared = Clearing.read_all(raw)
        self.raw = raw
        return self.cleared

    def grew(
        self, cleared: Mapping[str, Clearing], added: Mapping[str, Clearing], size: int
    ) -> None:
        """This call grew the cleared set to ``cleared`` (``size`` entries in state once the
        reducer has merged ``added``)."""
        self.cleared, self.raw, self.added, self.size = cleared, None, tuple(added), size

    def _grown_to(self, raw: object) -> bool:
        # Only this middleware writes its key, and its reducer only adds: a mapping of the size
        # we expect that holds what we last added is the set we know.
        return (
            self.raw is None
            and isinstance(raw, Mapping)
            and len(raw) == self.size
            and all(key in raw for key in self.added)
        )


class ContextEditorMiddleware(AgentMiddleware[ContextEditorState, Any, Any]):
    """Replaces all but the newest tool results by a short placeholder once the request is large.

    Once the request as it will be sent (earlier clearing applied) passes ``trigger_tokens``, the
    old results are cleared in whole batches of ``batch``, oldest first: never the newest ``keep``,
    never ``exclude_tools``, never non-text results or results saving under ``min_saved_tokens``.
    A cleared result is sent with the same bytes on every later call, so each edit costs one
    prompt-cache break and the calls between edits hit the cache. In the default
    ``mode="cache_aware"``, the newest whole batches are cleared only when that is expected to
    save more, under ``pricing``, than re-writing the cache costs, within ``expected_calls`` or
    else ``horizon`` times the calls made so far (see :mod:`tokenlean.context_editor._cache`);
    ``mode="plain"`` clears whenever the request is past the trigger, as the reference does.

    ``token_estimator`` is a :class:`~tokenlean.tokens.TokenCounter` or a function of a
    :class:`~tokenlean.context_editor.RequestView`; by default the fast estimate over the system
    prompt, tool schemas and messages. ``on_edit`` receives a
    :class:`~tokenlean.context_editor.ContextEdit` each time the cleared set grows. The placeholder
    names ``retrieval_tool`` when the agent has a tool of that name. Every default is
    :class:`~tokenlean.context_editor.ContextEditorSettings`'s.
    """

    state_schema = ContextEditorState

    def __init__(
        self,
        *,
        trigger_tokens: int = _DEFAULTS.trigger_tokens,
        keep: int = _DEFAULTS.keep,
        batch: int = _DEFAULTS.batch,
        exclude_tools: Iterable[str] = _DEFAULTS.exclude_tools,
        clear_tool_inputs: bool = _DEFAULTS.clear_tool_inputs,
        placeholder: str | PlaceholderFn | None = _DEFAULTS.placeholder,
        token_estimator: TokenCounter | TokenEstimator | None = None,
        on_edit: Callable[[ContextEdit], object] | None = None,
        mode: Mode = _DEFAULTS.mode,
        pricing: CachePricing | str = _DEFAULTS.pricing,
        expected_calls: int | None = _DEFAULTS.expected_calls,
        horizon: float = _DEFAULTS.horizon,
        min_saved_tokens: int = _DEFAULTS.min_saved_tokens,
        retrieval_tool: str | None = _DEFAULTS.retrieval_tool,
    ) -> None:
        super().__init__()
        self.config = ContextEditorSettings(
            trigger_tokens=trigger_tokens,
            keep=keep,
            batch=batch,
            exclude_tools=exclude_tools,  # type: ignore[arg-type]  # normalised in __post_init__
            clear_tool_inputs=clear_tool_inputs,
            placeholder=placeholder,
            min_saved_tokens=min_saved_tokens,
            mode=mode,
            pricing=pricing,  # type: ignore[arg-type]  # a preset name is resolved in __post_init__
            expected_calls=expected_calls,
            horizon=horizon,
            retrieval_tool=retrieval_tool,
        )
        if on_edit is not None:
            checks.function(on_edit, "on_edit")
        self.counter, self.estimate, self._incremental = _estimators(token_estimator)
        self.on_edit = on_edit
        self._threads: PrefixMemo[_Thread] = PrefixMemo()
        self._fixed_memo: _Fixed | None = None
        self._views = ViewCache()
        self._schemas = SchemaCache()

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        prepared = self._prepare(request)
        return _finish(handler(prepared.request), prepared.update)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        prepared = self._prepare(request)
        return _finish(await handler(prepared.request), prepared.update)

    def _prepare(self, request: ModelRequest[Any]) -> _Prepared:
        """The request to send and the state update; on any failure, the request unchanged."""
        with fail_open(logger, "context editor failed; sending the request unchanged"):
            return self._edit(request)
        return _Prepared(request, None)

    def _edit(self, request: ModelRequest[Any]) -> _Prepared:
        messages = request.messages
        if not messages:
            return _Prepared(request, None)
        scope = thread_scope()
        hit = self._threads.take(scope, messages)
        start, thread = (hit.n, hit.value) if hit else (0, _Thread(RequestLedger(self.counter), []))
        previous = thread.read(request.state.get(STATE_KEY))
        ledger = thread.ledger
        new = views_of(messages, start, cache=self._views)
        ledger.extend(new)
        thread.sent.extend(apply_edits(messages[start:], clearing_edits(new, ledger.cleared)))
        system = request.system_prompt
        fixed = self._fixed(system, request.tools)
        plan = plan_ledger(
            ledger,
            config=self.config,
            previous=previous,
            system=system,
            tools=self._schemas.schemas(request.tools) if fixed.schemas is None else fixed.schemas,
            estimate=None if self._incremental else self.estimate,
            fixed=fixed.tokens,
        )
        for index in sorted(ledger.dirty):  # the messages the cleared set changed
            edits = clearing_edits([ledger.view[index]], ledger.cleared, offset=index)
            thread.sent[index] = apply_edit(messages[index], edits[0]) if edits else messages[index]
        ledger.dirty.clear()
        self._threads.put(scope, messages, len(messages), thread, reuse=hit)
        edited = request.override(messages=list(thread.sent))
        if plan.edit is None:
            return _Prepared(edited, None)
        self._report(plan.edit)
        added = {c.tool_call_id: plan.cleared[c.tool_call_id] for c in plan.edit.cleared}
        raw = request.state.get(STATE_KEY)
        known = len(raw) if isinstance(raw, Mapping) else 0
        thread.grew(plan.cleared, added, known + len(added))
        return _Prepared(edited, {k: v.to_record() for k, v in added.items()})

    def _fixed(self, system: str | None, raw_tools: Sequence[Any]) -> _Fixed:
        """The system prompt and tool schemas: their tokens and the schemas, worked out once
        per distinct pair (the tools compared by identity, as :class:`SchemaCache` remembers
        them). A tool given as a schema mapping may change in place: with one, the schemas are
        read again on each call (``schemas`` is ``None``), while the count is kept as before."""
        key = (system, tuple(map(id, raw_tools)))
        memo = self._fixed_memo
        if memo is None or memo.key != key:
            schemas = self._schemas.schemas(raw_tools)
            counted = count_request((), self.counter, system=system, tools=schemas)
            mutable = any(isinstance(tool, Mapping) for tool in raw_tools)
            memo = self._fixed_memo = _Fixed(key, counted, list(raw_tools), schemas, mutable)
            return memo  # this call's schemas, whatever the tools
        return memo if not memo.mutable else replace(memo, schemas=None)

    def _report(self, edit: ContextEdit) -> None:
        if self.on_edit is None:
            return
        with fail_open(logger, "context editor on_edit callback failed"):
            self.on_edit(edit)


def _estimators(
    estimator: TokenCounter | TokenEstimator | None,
) -> tuple[TokenCounter, TokenEstimator, bool]:
    """The counter for single results, the request estimator, and whether the estimate is the
    counter's sum over messages (so it can be carried from call to call)."""
    if estimator is None or isinstance(estimator, TokenCounter):
        counter = memoized(estimator if estimator is not None else DEFAULT_COUNTER)
        return counter, request_estimator(counter), True
    if callable(estimator):
        return memoized(DEFAULT_COUNTER), estimator, False
    raise checks.ArgumentTypeError(
        "token_estimator must be a TokenCounter or a function of a RequestView, got "
        + checks.described(estimator)
    )


def _finish(
    response: ModelResponse[Any] | AIMessage, update: dict[str, ClearedRecord] | None
) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
    if update is None:
        return response
    if isinstance(response, AIMessage):
        response = ModelResponse(result=[response])
    return ExtendedModelResponse(
        model_response=response, command=Command(update={STATE_KEY: update})
    )
