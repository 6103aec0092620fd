"""``ToolOutputShorteningMiddleware``: shorten tool results at first sight, never touch them again.

In ``before_model`` it takes the tool results the model has not been sent yet (those after the
last AI message), shortens the long ones with :func:`tokenlean.shorten.shorten` (the tool call's
arguments and the calling turn's words are the query; lines the model was already shown are
pointed to instead of repeated), and writes each back into agent state under the same message
id, so the reducer replaces it and every later call re-sends the same bytes: the provider's
prompt cache keeps hitting. A shortened message keeps ``name``, ``status``, ``artifact`` and all
metadata, and is marked in ``response_metadata["tokenlean"]`` so it is never processed again.
Image and other non-text results, results without an id and already-seen results pass through.

Originals are kept per thread (in memory by default, or in a LangGraph store via
:class:`~tokenlean.store.LangGraphOriginalStore`), and the middleware adds a ``read_original``
tool so the agent can fetch an original by handle, whole, by line range or by pattern. Without
a ``thread_id`` nothing is kept and the markers give line numbers only.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any

from langchain.agents.middleware.types import AgentMiddleware, AgentState, PrivateStateAttr
from langchain_core.messages import AnyMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.config import get_config
from langgraph.runtime import Runtime
from pydantic import BaseModel
from typing_extensions import NotRequired, TypedDict

from tokenlean.langchain.adapter import replace_content, to_view
from tokenlean.shorten.firstsight import FirstSightPolicy, Planned, plan_first_sight
from tokenlean.shorten.options import DEFAULT_OPTIONS, ShortenOptions
from tokenlean.store import InMemoryOriginalStore, Original, OriginalStore, excerpt
from tokenlean.tokens import TokenCounter
from tokenlean.transcript import Message

logger = logging.getLogger(__name__)

#: Key in a shortened message's ``response_metadata``.
MARK = "tokenlean"
DEFAULT_MIN_TOKENS = 100
DEFAULT_MIN_SAVING = 0.1
DEFAULT_TOOL_NAME = "read_original"


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

    tokenlean_shortening: NotRequired[Annotated[ShorteningTotals, PrivateStateAttr, _add_totals]]


@dataclass(frozen=True, slots=True)
class ShorteningStats:
    """Counters over every thread this instance served."""

    results_shortened: int = 0
    tokens_before: int = 0
    tokens_after: int = 0


@dataclass(frozen=True, slots=True)
class _Update:
    state: dict[str, Any]
    originals: tuple[Original, ...]
    scope: str | None


class ToolOutputShorteningMiddleware(AgentMiddleware[ShorteningState, Any, Any]):
    """Shorten each long tool result once, before the model first sees it.

    Args:
        min_tokens: Results of at most this many tokens are left alone.
        max_tokens: Budget for a shortened result (overrides ``options.max_tokens``).
        options: Every other shortening setting (:class:`~tokenlean.shorten.ShortenOptions`).
        only: Shorten only these tools' results (``None``: every tool's).
        never: Never shorten these tools' results (e.g. one whose output the agent edits).
        store: Where originals are kept (default: in this process's memory).
        retrieval_tool: Add the tool that reads originals back, named ``tool_name``.
        dedupe: Point to lines the model was already shown instead of repeating them.
        min_saving: Skip a shortening that saves less than this share of a result's tokens.
        counter: Token counter for thresholds and reports (default: a fast estimate).
    """

    state_schema = ShorteningState

    def __init__(
        self,
        *,
        min_tokens: int = DEFAULT_MIN_TOKENS,
        max_tokens: int | None = None,
        options: ShortenOptions | None = None,
        only: Collection[str] | None = None,
        never: Collection[str] = (),
        store: OriginalStore | None = None,
        retrieval_tool: bool = True,
        tool_name: str = DEFAULT_TOOL_NAME,
        dedupe: bool = True,
        min_saving: float = DEFAULT_MIN_SAVING,
        counter: TokenCounter | None = None,
    ) -> None:
        super().__init__()
        if isinstance(min_tokens, bool) or not isinstance(min_tokens, int) or min_tokens < 0:
            raise ValueError(f"min_tokens must be a non-negative int, got {min_tokens!r}")
        if not 0.0 <= min_saving < 1.0:
            raise ValueError(f"min_saving must be in [0, 1), got {min_saving!r}")
        if isinstance(only, str) or isinstance(never, str):
            raise ValueError("only and never take collections of tool names, not a string")
        if not tool_name.isidentifier():
            raise ValueError(f"tool_name must be an identifier, got {tool_name!r}")
        opts = options or DEFAULT_OPTIONS
        self.options = replace(opts, max_tokens=max_tokens) if max_tokens is not None else opts
        self.min_tokens = min_tokens
        self.only = frozenset(only) if only is not None else None
        self.never = frozenset(never) | {tool_name}
        self.store: OriginalStore = store if store is not None else InMemoryOriginalStore()
        self.tool_name = tool_name
        self.dedupe = dedupe
        self.min_saving = min_saving
        self.counter = counter
        self.tools = [make_retrieval_tool(self.store, name=tool_name)] if retrieval_tool else []
        self._has_tool = retrieval_tool
        self._lock = threading.Lock()
        self._stats = ShorteningStats()

    @property
    def stats(self) -> ShorteningStats:
        with self._lock:
            return self._stats

    def before_model(self, state: ShorteningState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        update = self._prepare(state)
        if update is None:
            return None
        try:
            for original in update.originals:
                self.store.put(update.scope or "", original)
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
            for original in update.originals:
                await self.store.aput(update.scope or "", original)
        except Exception:  # never break the agent: send the results unshortened instead
            logger.exception("could not keep originals; tool results left as they are")
            return None
        return self._commit(update)

    # -- internals -----------------------------------------------------------------------

    def _prepare(self, state: ShorteningState) -> _Update | None:
        try:
            return self._plan(list(state.get("messages") or ()))
        except Exception:  # never break the agent
            logger.exception("tool-output shortening failed; results left as they are")
            return None

    def _plan(self, messages: Sequence[AnyMessage]) -> _Update | None:
        view = to_view(messages)
        scope = thread_scope()
        calls = {call.id for m in view for call in m.tool_calls}
        policy = FirstSightPolicy(
            min_tokens=self.min_tokens,
            options=self.options,
            dedupe=self.dedupe,
            keep_originals=scope is not None,
            tool_name=self.tool_name if self._has_tool else None,
            min_saving=self.min_saving,
            counter=self.counter,
        )
        planned = plan_first_sight(
            view,
            policy,
            lambda i, m: m.tool_call_id in calls and self._eligible(messages[i], m),
        )
        if not planned:
            return None
        updated = [_rewrite(messages[p.index], p) for p in planned]
        totals = ShorteningTotals(
            results=len(planned),
            tokens_before=sum(p.report.tokens_before for p in planned),
            tokens_after=sum(p.report.tokens_after for p in planned),
        )
        originals = tuple(
            Original(p.handle, p.original, view[p.index].name, view[p.index].tool_call_id)
            for p in planned
        )
        state = {"messages": updated, "tokenlean_shortening": totals}
        return _Update(state, originals if scope is not None else (), scope)

    def _eligible(self, message: BaseMessage, view: Message) -> bool:
        if not isinstance(message, ToolMessage) or not message.id or not view.is_text_only:
            return False
        if isinstance(message.response_metadata.get(MARK), dict):
            return False
        name = message.name or ""
        return name not in self.never and (self.only is None or name in self.only)

    def _commit(self, update: _Update) -> dict[str, Any]:
        totals: ShorteningTotals = update.state["tokenlean_shortening"]
        with self._lock:
            self._stats = ShorteningStats(
                self._stats.results_shortened + totals["results"],
                self._stats.tokens_before + totals["tokens_before"],
                self._stats.tokens_after + totals["tokens_after"],
            )
        return update.state


def thread_scope() -> str | None:
    """The current run's ``thread_id`` (``None`` outside a graph or without one)."""
    try:
        config = get_config()
    except RuntimeError:
        return None
    thread = (config.get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)


def _rewrite(message: BaseMessage, planned: Planned) -> BaseMessage:
    """``message`` with the shortened text, every other field kept, and the mark added."""
    text = planned.report.text
    content: str | tuple[dict[str, str], ...] = (
        text if isinstance(message.content, str) else ({"type": "text", "text": text},)
    )
    new = replace_content(message, content)
    mark = {
        "shortened": True,
        "handle": planned.handle,
        "kind": planned.report.kind,
        "tokens_before": planned.report.tokens_before,
        "tokens_after": planned.report.tokens_after,
    }
    return new.model_copy(update={"response_metadata": {**message.response_metadata, MARK: mark}})


# -- the retrieval tool ---------------------------------------------------------------------

_DESCRIPTION = (
    "Read the original of a shortened tool result: the handle is in its omission markers; "
    "give `lines` (e.g. '120-159') or `pattern` (text to look for), or neither for all of it."
)


class ReadOriginalArgs(BaseModel):
    """Arguments of the retrieval tool (described in the tool's description, to stay short)."""

    handle: str
    lines: str = ""
    pattern: str = ""


def make_retrieval_tool(store: OriginalStore, *, name: str = DEFAULT_TOOL_NAME) -> BaseTool:
    """A tool that reads originals from ``store``, only ever in the calling thread's scope."""

    # ``config`` is injected by LangChain (it looks for a parameter typed exactly RunnableConfig)
    def read(handle: str, config: RunnableConfig, lines: str = "", pattern: str = "") -> str:
        scope = _scope_of(config)
        found = store.get(scope, handle.strip()) if scope is not None else None
        return _answer(found, handle, lines, pattern, scope)

    async def aread(handle: str, config: RunnableConfig, lines: str = "", pattern: str = "") -> str:
        scope = _scope_of(config)
        found = await store.aget(scope, handle.strip()) if scope is not None else None
        return _answer(found, handle, lines, pattern, scope)

    return StructuredTool.from_function(
        func=read,
        coroutine=aread,
        name=name,
        description=_DESCRIPTION,
        args_schema=ReadOriginalArgs,
    )


def _scope_of(config: RunnableConfig | None) -> str | None:
    thread = ((config or {}).get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)


def _answer(
    found: Original | None, handle: str, lines: str, pattern: str, scope: str | None
) -> str:
    if scope is None:
        return "No original is kept outside a conversation thread."
    if found is None:
        return f"No original with handle {handle!r} in this conversation."
    try:
        return excerpt(found.text, lines=lines or None, pattern=pattern or None)
    except ValueError as exc:
        return str(exc)
