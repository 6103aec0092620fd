"""When a thread's requests list ``read_original`` (:class:`RetrievalGate`), and the thread's
bookkeeping the rules read, kept in agent state (:class:`RetrievalState`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from langchain.agents.middleware import AgentState, ModelRequest
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool
from typing_extensions import NotRequired

from tokenlean.cost import CachePricing
from tokenlean.langchain._adapter import ViewCache, views_of
from tokenlean.langchain._helpers import SchemaCache, last_ai_index, thread_scope
from tokenlean.langchain._memos import PrefixMemo
from tokenlean.langchain.retrieval import is_retrieval_tool, same_tool
from tokenlean.offering import Offer, OfferRules, names_tool
from tokenlean.tokens import TokenCounter, count_request, memoized, message_tokens, tool_schema_text

__all__ = ["RetrievalGate", "RetrievalState"]


def add_counts(left: int | None, right: int | None) -> int:
    """The reducer of the counting keys: counts add up."""
    return (left or 0) + (right or 0)


def later(left: float | None, right: float | None) -> float:
    """The reducer of :data:`CALLED_AT_KEY`: the later time."""
    return max(left or 0.0, right or 0.0)


def either(left: bool | None, right: bool | None) -> bool:
    """The reducer of :data:`OFFERED_KEY`: once offered, always offered."""
    return bool(left) or bool(right)


class RetrievalState(AgentState[Any]):
    """Agent state with the thread's retrieval bookkeeping: the originals kept and what their
    cuts saved, and whether and when the thread was offered the tool (every shortener adds to
    it, so each one's state schema extends this)."""

    tokenlean_originals: NotRequired[Annotated[int, PrivateStateAttr, add_counts]]
    tokenlean_originals_saved: NotRequired[Annotated[int, PrivateStateAttr, add_counts]]
    tokenlean_originals_saved_at: NotRequired[Annotated[int, PrivateStateAttr, add_counts]]
    tokenlean_originals_forgone: NotRequired[Annotated[int, PrivateStateAttr, add_counts]]
    tokenlean_originals_offered: NotRequired[Annotated[bool, PrivateStateAttr, either]]
    tokenlean_called_at: NotRequired[Annotated[float, PrivateStateAttr, later]]


@dataclass(slots=True)
class _Seen:
    tokens: int = 0  # of the messages so far
    turns: int = 0  # assistant messages so far (model calls made)


class RetrievalGate:
    """Lists the retrieval tool in a thread's requests where the core's rules say it pays,
    and says whether a request holds it (:meth:`in_request`): a marker names the tool only in
    a request that lists it.

    The rules are :mod:`tokenlean.offering`'s (:class:`~tokenlean.offering.Offer` at the
    first call, with ``start_share``; then :class:`~tokenlean.offering.OfferRules`: a join on
    a call whose cache went cold, or once the thread's savings cover the schema); the ledger
    they read is this thread's state (:class:`RetrievalState`). The gate only translates: it
    sizes the thread (its messages counted once each, per thread, and the system prompt and
    tool schemas of its last request), and hides the tool from a request until the thread is
    offered it. Messages are read through ``views``, the view cache of the middleware the gate
    belongs to (one of its own when none is given); the gate keeps the schemas it sizes.
    """

    def __init__(
        self,
        tool: BaseTool,
        *,
        pricing: CachePricing,
        counter: TokenCounter,
        min_remaining_calls: int = 0,
        always: bool = False,
        views: ViewCache | None = None,
        start_share: float = 0.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.tool = tool
        # each thread's choice at its first call (recomputed from a request when not held)
        self._started: dict[tuple[object, ...], bool] = {}
        self._threads: dict[str | None, bool] = {}
        # whether each thread's last request held a tool of the tool's name
        self._held: dict[str | None, bool] = {}
        # per thread: how many messages were scanned for a marker naming the tool, and if found
        self._named: dict[str | None, tuple[int, bool]] = {}
        self.counter = memoized(counter)
        self._views = views if views is not None else ViewCache()
        self._schemas = SchemaCache()
        self.schema = self.counter.count(tool_schema_text(self._schemas.schemas([tool])))
        # the core's rules (the first call's, which every way in that lists the tool shares,
        # and a later join's); this gate only measures the thread
        self.offer = Offer(self.schema, start_share, always, self.counter)
        self.rules = OfferRules(self.offer, pricing, min_remaining_calls, clock)
        self._sizes: PrefixMemo[_Seen] = PrefixMemo()
        # each thread's last system prompt and tools, sized only when an offer is weighed
        self._requests: dict[str | None, tuple[Any, Sequence[Any]]] = {}
        self._fixed: dict[tuple[object, ...], int] = {}

    pricing = property(lambda self: self.rules.pricing)
    min_remaining_calls = property(lambda self: self.rules.min_remaining_calls)

    def offered(self, state: Mapping[str, Any]) -> bool:
        return self.rules.offered(state)

    def in_request(self, state: Mapping[str, Any], scope: str | None) -> bool:
        """Whether this call's request will hold the tool, as far as known before it is built:
        the thread's last request held a tool of its name (this gate's, or another shortener's
        given the same store; a thread keeps what it was offered), else, in a process that has
        not served the thread yet, whether the state says it was offered. Markers may name the
        tool only then."""
        held = self._held.get(scope)
        return held if held is not None else self.offered(state)

    def offer_now_pays(
        self, state: Mapping[str, Any], messages: Sequence[Any], *, extra: int
    ) -> bool:
        """Whether offering the tool on this call pays (:meth:`OfferRules.joins_now
        <tokenlean.offering.OfferRules.joins_now>`: only on a call whose cache went cold, where
        the cuts that name it, ``extra`` tokens more, cover the schema). ``messages`` are the
        thread's as sent without those cuts."""
        return self.rules.joins_now(state, _Measure(self, thread_scope(), messages), extra=extra)

    def hide(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """The request without the tool while the thread has not been offered it.

        A tool of the agent's own with the retrieval tool's name is refused: the agent would
        call one thinking it was the other.
        """
        name = self.tool.name
        for tool in request.tools:
            if getattr(tool, "name", None) == name and not is_retrieval_tool(tool):
                raise ValueError(
                    f"the agent has its own tool named {name!r} ({tool!r}), which is also the "
                    "name of tokenlean's retrieval tool: rename it, or give the shorteners "
                    "another tool_name"
                )
        own = any(same_tool(t, self.tool) for t in request.tools)
        if not own:
            self._threads[thread_scope()] = False  # nothing of its own to offer from the start
        elif not (
            self.offered(request.state)
            or self._from_start(request)
            or self._history_names_tool(request.messages)
        ):
            tools = [t for t in request.tools if not same_tool(t, self.tool)]
            request = request.override(tools=tools) if len(tools) < len(request.tools) else request
        self._remember_fixed(request)
        if len(self._held) > 1024:
            self._held.clear()
        self._held[thread_scope()] = any(getattr(t, "name", None) == name for t in request.tools)
        return request

    def _history_names_tool(self, messages: Sequence[Any]) -> bool:
        """:func:`names_tool` on the thread's history, reading only the messages added since
        the thread's last call (a history is appended to; a shorter one is read again)."""
        scope = thread_scope()
        done, found = self._named.get(scope, (0, False))
        if done > len(messages):
            done, found = 0, False
        found = found or names_tool(views_of(messages, done, cache=self._views), self.tool.name)
        if len(self._named) > 1024:
            self._named.clear()
        self._named[scope] = (len(messages), found)
        return found

    def account(
        self,
        state: Mapping[str, Any],
        messages: Sequence[Any],
        *,
        saved: int,
        kept: int,
        offer: bool = False,
        forgone: int = 0,
    ) -> dict[str, Any]:
        """The state update for ``kept`` originals cut by ``saved`` tokens on this call
        (:meth:`OfferRules.account <tokenlean.offering.OfferRules.account>`), the tool
        offered when ``offer`` (this call's cuts name it), when the thread was offered it
        from its first call, or when its savings so far now pay for it. ``messages`` are the
        thread's as the model will be sent them (this call's cuts made)."""
        scope = thread_scope()
        offer = offer or bool(self._threads.get(scope))
        measure = _Measure(self, scope, messages)
        return self.rules.account(
            state, measure, saved=saved, kept=kept, offer=offer, forgone=forgone
        )

    def _from_start(self, request: ModelRequest[Any]) -> bool:
        """Whether the thread is offered the tool from its first call: the schema is at most
        ``start_share`` of that call's prompt (the system prompt, the other tools and the
        messages before the first reply), so a function of the request, the same after a
        restart. Remembered per thread for :meth:`account`, which keeps it in the state."""
        first = []
        for message in request.messages:
            if isinstance(message, AIMessage):
                break
            first.append(message)
        tools = [t for t in request.tools if not same_tool(t, self.tool)]
        key = (thread_scope(), request.system_prompt, *map(id, tools), *map(id, first))
        started = self._started.get(key)
        if started is None:
            if len(self._started) > 1024:
                self._started.clear()
            views = views_of(first, 0, cache=self._views)
            fixed = count_request(
                (), self.counter, system=request.system_prompt, tools=self._schemas.schemas(tools)
            )
            started = self._started[key] = self.offer.offered(views, fixed)
        if len(self._threads) > 1024:
            self._threads.clear()
        self._threads[thread_scope()] = started
        return started

    def _size(self, scope: str | None, messages: Sequence[Any]) -> _Seen:
        hit = self._sizes.take(scope, messages)
        start, seen = (hit.n, hit.value) if hit else (0, _Seen())
        for message in views_of(messages, start, cache=self._views):
            seen.tokens += message_tokens(message, self.counter)
            seen.turns += message.role == "assistant"
        self._sizes.put(scope, messages, len(messages), seen, reuse=hit)
        return seen

    def _remember_fixed(self, request: ModelRequest[Any]) -> None:
        if len(self._requests) > 1024:
            self._requests.clear()
        self._requests[thread_scope()] = (request.system_prompt, request.tools)

    def _fixed_tokens(self, scope: str | None) -> int:
        """Tokens of the thread's last system prompt and tool schemas (0 before a request)."""
        last = self._requests.get(scope)
        if last is None:
            return 0
        system, tools = last
        key = (system, *map(id, tools))
        fixed = self._fixed.get(key)
        if fixed is None:
            if len(self._fixed) > 64:
                self._fixed.clear()
            schemas = self._schemas.schemas(tools)
            fixed = self._fixed[key] = count_request((), self.counter, system=system, tools=schemas)
        return fixed


class _Measure:
    """What the rules ask of a thread, measured from its messages as this call sends them
    (sized once, through the gate's per-thread memo)."""

    def __init__(self, gate: RetrievalGate, scope: str | None, messages: Sequence[Any]) -> None:
        self._gate, self._scope, self._messages = gate, scope, messages
        self._seen: _Seen | None = None

    def _size(self) -> _Seen:
        if self._seen is None:
            self._seen = self._gate._size(self._scope, self._messages)
        return self._seen

    def turns(self) -> int:
        return self._size().turns

    def prompt(self) -> int:
        return self._gate._fixed_tokens(self._scope) + self._size().tokens

    def new(self) -> int:
        last = max(0, last_ai_index(self._messages))
        views = views_of(self._messages, last, cache=self._gate._views)
        return sum(message_tokens(m, self._gate.counter) for m in views)

    def first_call(self) -> bool:
        return last_ai_index(self._messages) < 0
