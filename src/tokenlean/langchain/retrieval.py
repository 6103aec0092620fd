"""``read_original``: the one tool through which an agent reads back what tokenlean cut.

A handle names an original kept in an :class:`~tokenlean.store.OriginalStore` (a shortened
tool result or tool input), always in the calling thread's scope, and in the store the
middleware that kept it chose (:class:`~tokenlean.langchain.store.StoreChoice`: the one given,
else the agent's own store, which LangGraph hands the tool through its ``ToolRuntime``, else
memory). A
tool call id names a result that :class:`~tokenlean.langchain.ContextEditorMiddleware` cleared
from the request: the agent's state still holds it whole, so the tool reads it from there. A
handle that is not found gets one of three answers: it was evicted from memory, it was kept once
(the conversation names it) but is gone (a restart of a process that held it in memory), or
there is no such handle.

Shorteners share it: middleware given no store share one
:class:`~tokenlean.langchain.store.StoreChoice` (:func:`shared_choice`) and
:func:`retrieval_tool` gives one tool per choice, so an agent built
with several shorteners offers one ``read_original`` that reads every original.

The tool costs its schema on every call. A thread is only offered it once something was kept
for it to read (:class:`RetrievalGate`): an agent whose outputs never need shortening pays
nothing, and the call that first offers it re-writes the prompt cache once, which that call's
cuts must pay for; a marker names the tool only in a request that lists it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, cast

from langchain.agents.middleware import AgentState, ModelRequest
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolRuntime
from pydantic import BaseModel, ConfigDict, PrivateAttr
from typing_extensions import NotRequired

from tokenlean.cost import CachePricing
from tokenlean.langchain._adapter import ViewCache, views_of
from tokenlean.langchain._helpers import (
    PrefixMemo,
    SchemaCache,
    last_ai_index,
    thread_scope,
)
from tokenlean.langchain.store import StoreChoice
from tokenlean.offering import (
    Offer,
    OfferRules,
    names_tool,
)
from tokenlean.shorten import readable
from tokenlean.store import (
    RETRIEVAL_TOOL,
    EvictingStore,
    Original,
    OriginalStore,
    excerpt,
    looks_like_handle,
    retrieval_description,
)
from tokenlean.tokens import (
    TokenCounter,
    count_request,
    memoized,
    message_tokens,
    tool_schema_text,
)
from tokenlean.transcript import content_text

_DESCRIPTION = retrieval_description(call_ids=True)


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


class ReadOriginalArgs(BaseModel):
    """Arguments of the retrieval tool (described in the tool's description, to stay short)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    handle: str
    lines: str = ""
    pattern: str = ""
    # Injected by LangGraph's tool node (state, config, the agent's store); never in the schema
    # the model sees. ``None`` when the tool is called outside a graph.
    runtime: ToolRuntime = None  # type: ignore[assignment]


class _ReadOriginal(StructuredTool):
    """A ``read_original`` tool made by tokenlean. Its class is what :func:`is_retrieval_tool`
    tests (a copy LangChain makes is still one), and it knows what it reads (:func:`_same_tool`)."""

    # the given store it reads, else its store choice: two tools of one name reading the same
    # thing read the same originals
    _reads: object = PrivateAttr(default=None)


#: The default store choice: where every middleware given no store keeps originals. One per
#: process by design (the documented default store, shared by the shorteners so that one
#: ``read_original`` reads them all), not a cache; it keeps its own tools (StoreChoice.tool).
_SHARED = StoreChoice()


def shared_choice() -> StoreChoice:
    """Where every shortener given no store keeps originals: the agent's store when it has
    one, else one memory per process (scoped per thread)."""
    return _SHARED


def retrieval_tool(store: OriginalStore | StoreChoice, *, name: str = RETRIEVAL_TOOL) -> BaseTool:
    """The tool reading ``store``: the same object for the same store choice and name (the
    choice keeps it), so several shorteners sharing a choice give an agent one tool.

    A store given as it is gets a choice of its own on each call, so a tool of its own; the
    tools made for one store read the same originals, and tokenlean takes them for one (as
    the agent does, keeping one tool per name): the agent is offered one.
    """
    choice = StoreChoice.of(store)
    return choice.tool(name, lambda: make_retrieval_tool(choice, name=name))


def is_retrieval_tool(tool: object) -> bool:
    """Whether ``tool`` is a ``read_original`` tool made by tokenlean."""
    return isinstance(tool, _ReadOriginal)


def _same_tool(tool: object, other: BaseTool) -> bool:
    """Whether ``tool`` is ``other`` or a tool of its name made by tokenlean to read the same
    originals (the tools of several shorteners given one store)."""
    if tool is other:
        return True
    return (
        isinstance(tool, _ReadOriginal)
        and isinstance(other, _ReadOriginal)
        and tool.name == other.name
        and tool._reads is other._reads
    )


def make_retrieval_tool(
    store: OriginalStore | StoreChoice, *, name: str = RETRIEVAL_TOOL
) -> BaseTool:
    """A new tool that reads originals from ``store`` (a store, or the :class:`StoreChoice` of
    the middleware that keeps them), only ever in the calling thread's scope.

    Its artifact names the tool whose original was read, so a shortener learns which tool's
    results it cut too much.
    """
    choice = StoreChoice.of(store)

    # ``runtime`` is injected by LangGraph's tool node (state, config and the agent's store).
    def read(
        handle: str, runtime: Any = None, lines: str = "", pattern: str = ""
    ) -> tuple[str, dict[str, str]]:
        found_in, scope, key = _where(choice, runtime, handle)
        found = found_in.get(scope, key) if scope is not None else None
        return _answer(found, found_in, runtime, (name, key, lines, pattern), scope)

    async def aread(
        handle: str, runtime: Any = None, lines: str = "", pattern: str = ""
    ) -> tuple[str, dict[str, str]]:
        found_in, scope, key = _where(choice, runtime, handle)
        found = await found_in.aget(scope, key) if scope is not None else None
        return _answer(found, found_in, runtime, (name, key, lines, pattern), scope)

    tool = cast(
        "_ReadOriginal",
        _ReadOriginal.from_function(
            func=read,
            coroutine=aread,
            name=name,
            description=_DESCRIPTION,
            args_schema=ReadOriginalArgs,
            response_format="content_and_artifact",
        ),
    )
    tool._reads = choice.given if choice.given is not None else choice
    return tool


def _where(choice: StoreChoice, runtime: Any, handle: str) -> tuple[OriginalStore, str | None, str]:
    """The store to read, the calling thread's scope and the cleaned handle (sync and async)."""
    config = getattr(runtime, "config", None)
    scope = thread_scope(config) if config is not None else None
    return choice.pick(getattr(runtime, "store", None)), scope, handle.strip()


def _from_state(state: Any, handle: str) -> Original | None:
    """A tool result the agent's state holds under the tool call id ``handle``."""
    messages = _messages(state)
    key = handle.strip()
    for message in reversed(messages):
        if isinstance(message, ToolMessage) and message.tool_call_id == key:
            return Original(key, content_text(message.content), message.name, key)
    return None


def _answer(
    found: Original | None,
    store: OriginalStore,
    runtime: Any,
    ask: tuple[str, str, str, str],
    scope: str | None,
) -> tuple[str, dict[str, str]]:
    """The tool's reply to ``ask`` (its own name, the handle, lines, pattern) and its artifact
    (which tool's original was read); sync and async."""
    tool, handle, lines, pattern = ask
    state = getattr(runtime, "state", None)
    found = found or _from_state(state, handle)
    if found is None and scope is None:
        return "No original is kept outside a conversation thread.", {}
    if found is None:
        return _missing(store, _messages(state), tool, handle, scope or ""), {}
    read_back = {"read_back": found.tool or ""}
    try:
        # lines are counted as the markers count them: inside a JSON envelope, its text's
        text = readable(found.text)
        return excerpt(text, lines=lines or None, pattern=pattern or None), read_back
    except ValueError as exc:
        return str(exc), read_back


def _messages(state: Any) -> Sequence[Any]:
    messages = state.get("messages") if isinstance(state, Mapping) else None
    return messages if isinstance(messages, Sequence) else ()


def _missing(
    store: OriginalStore, messages: Sequence[Any], tool: str, handle: str, scope: str
) -> str:
    """Why ``handle`` is not found: evicted, gone with the process that held it, or unknown."""
    if isinstance(store, EvictingStore) and store.evicted(scope, handle):
        return (
            f"The original {handle!r} was dropped from memory to bound its size; only the "
            "shortened text is left."
        )
    if looks_like_handle(handle) and _named_in(messages, tool, handle):
        return (
            f"The original {handle!r} is no longer kept (it was held in the memory of a "
            "process that has ended); only the shortened text is left."
        )
    return f"No original with handle {handle!r} in this conversation."


def _named_in(messages: Sequence[Any], tool: str, handle: str) -> bool:
    """Whether a shortened message names ``handle`` in a marker (calls of the retrieval tool
    ``tool`` and its answers name handles too, but prove nothing)."""
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.name != tool and handle in content_text(message.content):
                return True
        elif isinstance(message, AIMessage) and any(
            call.get("name") != tool and handle in str(call.get("args"))
            for call in message.tool_calls
        ):
            return True
    return False


def read_back(messages: Sequence[Any], tool_name: str) -> list[str]:
    """The tools whose originals ``messages`` (new tool results) read back."""
    tools: list[str] = []
    for message in messages:
        if not isinstance(message, ToolMessage) or message.name != tool_name:
            continue
        artifact = message.artifact
        if isinstance(artifact, Mapping) and isinstance(artifact.get("read_back"), str):
            tools.append(artifact["read_back"])
    return tools


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
        own = any(_same_tool(t, self.tool) for t in request.tools)
        if not own:
            self._threads[thread_scope()] = False  # nothing of its own to offer from the start
        elif not (
            self.offered(request.state)
            or self._from_start(request)
            or self._history_names_tool(request.messages)
        ):
            tools = [t for t in request.tools if not _same_tool(t, self.tool)]
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
        tools = [t for t in request.tools if not _same_tool(t, self.tool)]
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
