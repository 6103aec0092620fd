"""What every tokenlean middleware needs from LangChain, in one place.

The conversation thread a call belongs to, the tool schemas a request will send, the
``tool_choice`` that means "answer now", and a per-thread memo that lets a middleware carry its
work on a growing transcript from one call to the next instead of redoing it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Generic, TypeVar

from langchain.agents.middleware.types import (
    ContextT,
    ModelRequest,
    ModelResponse,
    ResponseT,
    hook_config,
)
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.config import get_config

from tokenlean import checks
from tokenlean._failopen import fail_open
from tokenlean.langchain._adapter import ViewCache, views_of
from tokenlean.loop_guard import StepScan
from tokenlean.store import aput_all, put_all
from tokenlean.tokens import TokenCounter, message_tokens
from tokenlean.transcript import Message

logger = logging.getLogger(__name__)

T = TypeVar("T")


def merge_records(left: dict[str, T] | None, right: dict[str, T] | None) -> dict[str, T]:
    """The reducer of a state key that only grows (records by id): an update holds the new
    records alone, and a newer record of an id replaces the older."""
    return {**(left or {}), **(right or {})}


class RequestRewriter(Generic[ContextT, ResponseT]):
    """The model-call hooks of a middleware whose part in a model call is to hand the handler a
    rewritten request (:meth:`_rewrite_request`): the sync and the async hook share it."""

    def _rewrite_request(self, request: ModelRequest[ContextT]) -> ModelRequest[ContextT]:
        raise NotImplementedError

    def wrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], ModelResponse[ResponseT]],
    ) -> ModelResponse[ResponseT]:
        return handler(self._rewrite_request(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], Awaitable[ModelResponse[ResponseT]]],
    ) -> ModelResponse[ResponseT]:
        return await handler(self._rewrite_request(request))


Planned = TypeVar("Planned")
#: What a hook returns: the state update, or None for none.
Update = dict[str, Any] | None


def state_hooks(
    method: str, *, can_jump_to: list[Any] | None = None
) -> tuple[Callable[..., Update], Callable[..., Coroutine[Any, Any, Update]]]:
    """A sync hook and its async twin (``before_model, abefore_model = state_hooks("_x")``),
    both answering ``self.<method>(state)``: the hook's work reads only the state and does
    not block. ``can_jump_to`` is LangChain's ``hook_config`` for both."""

    def hook(self: Any, state: Any, runtime: Any) -> Update:
        return getattr(self, method)(state)  # type: ignore[no-any-return]

    async def ahook(self: Any, state: Any, runtime: Any) -> Update:
        return getattr(self, method)(state)  # type: ignore[no-any-return]

    if can_jump_to is None:
        return hook, ahook
    return hook_config(can_jump_to=can_jump_to)(hook), hook_config(can_jump_to=can_jump_to)(ahook)


class KeptBeforeCommit(RequestRewriter[ContextT, ResponseT], Generic[Planned, ContextT, ResponseT]):
    """The hooks of a shortener that plans before the model call, keeps the originals its
    markers name in the runtime's store, and only then commits the plan to the state (a failure
    to keep them commits nothing: no marker names an original that is not there). The sync and
    the async hook differ only in how the store is written."""

    stores: Any  # a StoreChoice
    _logger: logging.Logger = logger
    _KEEP_FAILED = "could not keep originals; left as they are"

    def _prepare(self, state: Any) -> Planned | None:
        raise NotImplementedError

    def _kept(self, planned: Planned) -> tuple[str, Sequence[Any]]:
        """The scope and the originals to keep for ``planned``."""
        raise NotImplementedError

    def _commit(self, planned: Planned) -> Update:
        raise NotImplementedError

    def before_model(self, state: Any, runtime: Any) -> Update:
        planned = self._prepare(state)
        if planned is None:
            return None
        with fail_open(self._logger, self._KEEP_FAILED) as guard:
            put_all(*self._to_keep(planned, runtime))
        return None if guard.failed else self._commit(planned)

    async def abefore_model(self, state: Any, runtime: Any) -> Update:
        planned = self._prepare(state)
        if planned is None:
            return None
        with fail_open(self._logger, self._KEEP_FAILED) as guard:
            await aput_all(*self._to_keep(planned, runtime))
        return None if guard.failed else self._commit(planned)

    def _to_keep(self, planned: Planned, runtime: Any) -> tuple[Any, str, Sequence[Any]]:
        """The store the originals of ``planned`` are kept in, their scope, and them (in one
        batch where the store takes one)."""
        scope, originals = self._kept(planned)
        return self.stores.pick(getattr(runtime, "store", None)), scope, originals


def thread_scope(config: RunnableConfig | None = None) -> str | None:
    """The ``thread_id`` of ``config``, or of the running graph's config (``None`` without one)."""
    if config is None:
        try:
            config = get_config()
        except RuntimeError:  # outside a graph
            return None
    thread = (config.get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)


def tool_schemas(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """The tools as the OpenAI-style schemas a provider receives, each converted afresh (an
    owner that counts the same tools on every call keeps a :class:`SchemaCache`).

    A tool that cannot be described is left out (logged): it only makes a count smaller.
    """
    return _schemas(tools, _converted)


class SchemaCache:
    """Tool schemas by tool, each tool converted once while the cache holds it.

    A middleware that counts the tool schemas of every request owns one: a request carries
    the same tool objects call after call, and converting one (a JSON schema built from its
    arguments' model) costs more than the rest of the count. Holding the tool keeps its id
    from being reused while its schema is remembered; at most ``max_tools`` are.
    """

    def __init__(self, *, max_tools: int = 1024) -> None:
        self._schemas: dict[int, tuple[Any, dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._max = max_tools

    def schemas(self, tools: Sequence[Any]) -> list[dict[str, Any]]:
        """:func:`tool_schemas`, each tool converted the first time this cache sees it."""
        return _schemas(tools, self._schema)

    def _schema(self, tool: Any) -> Update:
        with self._lock:
            hit = self._schemas.get(id(tool))
        if hit is not None and hit[0] is tool:
            return hit[1]
        schema = _converted(tool)
        if schema is None:
            return None
        with self._lock:
            if len(self._schemas) >= self._max:
                self._schemas.clear()
            self._schemas[id(tool)] = (tool, schema)
        return schema


def _schemas(
    tools: Sequence[Any], convert: Callable[[Any], dict[str, Any] | None]
) -> list[dict[str, Any]]:
    """The schemas of ``tools``: a mapping is a schema already, anything else is converted."""
    schemas: list[dict[str, Any]] = []
    for tool in tools:
        schema = dict(tool) if isinstance(tool, Mapping) else convert(tool)
        if schema is not None:
            schemas.append(schema)
    return schemas


def _converted(tool: Any) -> Update:
    """``tool``'s schema, or ``None`` (logged) when it cannot be described."""
    try:
        return convert_to_openai_tool(tool)
    except Exception:
        logger.debug("could not describe tool %r; left out of the count", tool)
        return None


def no_tool_choice(model: object, override: str | dict[str, Any] | None) -> str | dict[str, Any]:
    """The ``tool_choice`` that forbids tool calls: ``override``, else the model's spelling.

    ``ChatAnthropic`` reads any string other than its own keywords as a tool name, so it gets
    ``{"type": "none"}``; every other chat model gets ``"none"``.
    """
    if override is not None:
        return override
    try:
        llm_type = getattr(model, "_llm_type", "")
    except Exception:  # a model whose property fails: the common spelling
        llm_type = ""
    return {"type": "none"} if llm_type == "anthropic-chat" else "none"


def middleware_name(
    middleware: object, name: str | None, settings: object, defaults: object
) -> str:
    """A middleware's name: ``name``, else its class name, followed by a digest of its settings
    when they differ from the defaults (so instances set differently can share an agent, and
    every process names an instance the same way: graph nodes and checkpoints use the name)."""
    if name is not None:
        return checks.text(name, "name", blank=False)
    base = type(middleware).__name__
    if settings == defaults:
        return base
    digest = hashlib.sha256(_describe(settings).encode("utf-8")).hexdigest()[:8]
    return f"{base}[{digest}]"


def _describe(settings: object) -> str:
    """A stable description of a settings dataclass (objects without a value: their type)."""
    if is_dataclass(settings) and not isinstance(settings, type):
        parts = {f.name: _describe(getattr(settings, f.name)) for f in fields(settings)}
        return json.dumps(parts, sort_keys=True)
    if isinstance(settings, (frozenset, set)):
        return json.dumps(sorted(map(str, settings)))
    if settings is None or isinstance(settings, (str, int, float, bool)):
        return json.dumps(settings)
    return type(settings).__qualname__


def last_ai_index(messages: Sequence[BaseMessage]) -> int:
    """The index of the newest ``AIMessage`` (-1 when there is none), read from the end."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AIMessage):
            return index
    return -1


@dataclass(slots=True)
class Held(Generic[T]):
    """A thread's remembered work: built on the messages ``keep`` (held, so none is reused)."""

    keep: list[Any]
    value: T

    @property
    def n(self) -> int:
        return len(self.keep)


class PrefixMemo(Generic[T]):
    """Per-thread work on the messages a call has already read, carried to the next call.

    A middleware stores a value computed from a prefix of the transcript; the next call gets it
    back only if its transcript starts with the very same message objects, or equal copies (a
    pointer comparison each, not a re-read), so anything that changed or removed one of them
    simply makes the middleware start over (the results are the same; only the time differs).
    Taking an entry removes it until it is put back, so two calls of one thread at once never
    share a value. At most ``max_threads`` threads are remembered.
    """

    def __init__(self, *, max_threads: int = 256) -> None:
        self._entries: OrderedDict[str | None, Held[T]] = OrderedDict()
        self._max = max_threads
        self._lock = threading.Lock()

    def take(self, scope: str | None, messages: Sequence[Any]) -> Held[T] | None:
        """The work remembered for ``scope`` when ``messages`` starts with its messages."""
        with self._lock:
            held = self._entries.pop(scope, None)
        if held is None or len(messages) < held.n or not _starts_with(messages, held.keep):
            return None
        if held.keep and held.keep[-1] is not messages[held.n - 1]:
            # Equal copies (after a checkpoint is loaded, every message is one): hold these
            # objects, so the next calls compare pointers, not contents.
            held.keep = list(messages[: held.n])
        return held

    def put(
        self, scope: str | None, messages: Sequence[Any], n: int, value: T, *, reuse: Held[T] | None
    ) -> None:
        """Remember ``value`` as built on ``messages[:n]`` (``reuse``: what was taken, whose
        message list is extended rather than copied)."""
        keep = reuse.keep if reuse is not None and reuse.n <= n else []
        keep.extend(messages[len(keep) : n])
        with self._lock:
            self._entries[scope] = Held(keep, value)
            self._entries.move_to_end(scope)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def _starts_with(messages: Sequence[Any], keep: list[Any]) -> bool:
    """Whether ``messages`` starts with the items of ``keep``: the same objects or equal copies.

    List comparison runs in C and takes an object for equal to itself without calling its
    ``__eq__``, so a transcript that starts with the very same objects costs a pointer
    comparison each. ``keep <= messages`` does that without copying the prefix (a copy touches
    every message object, which late in a long run costs more than the comparison): it is true
    when every kept item equals its counterpart and ``messages`` is at least as long, and raises
    ``TypeError`` at the first pair that differs, since messages have no order.
    """
    if type(messages) is list and keep and isinstance(keep[-1], BaseMessage):
        try:
            return keep <= messages
        except TypeError:
            return False
    start = messages[: len(keep)]
    return (start if isinstance(start, list) else list(start)) == keep


@dataclass(slots=True)
class _Scanned:
    settled: StepScan  # the steps of the messages before the newest AI message
    tail: list[BaseMessage]  # the messages from there on, as read last call
    views: list[Message]  # and their neutral views
    read: StepScan | None = None  # ``settled`` continued over ``tail``: what last call returned


class StepMemo:
    """The agent's steps so far, per thread; those before the newest AI message are complete
    (their results came in) and are carried from call to call instead of being rebuilt. The
    newest turn is read again each call (its results may still be coming in), but a message
    already read then is not converted again, and once a newer turn comes the steps read from
    it are kept as they are (the same objects, so what was worked out about them still holds).
    Messages are converted through ``views``, the view cache of the middleware that owns it."""

    def __init__(self, views: ViewCache) -> None:
        self._memo: PrefixMemo[_Scanned] = PrefixMemo()
        self._views = views

    def scan(self, messages: Sequence[BaseMessage]) -> StepScan:
        boundary = max(0, last_ai_index(messages))
        scope = thread_scope()
        hit = self._memo.take(scope, messages)
        if hit is None or hit.n > boundary:
            hit = None
        start, known = (hit.n, hit.value) if hit is not None else (0, _Scanned(StepScan(), [], []))
        if known.read is not None and list(messages[start:boundary]) == known.tail:
            # The turn read last call is now settled, its results all in: keep its steps.
            settled = known.settled.settle(known.read)
            views = views_of(messages, boundary, cache=self._views)
        else:
            views = _reusing(known, messages, start, self._views)
            settled = known.settled.extend(views[: boundary - start])
            views = views[boundary - start :]
        read = settled.extend(views, settled=False)
        self._memo.put(
            scope,
            messages,
            boundary,
            _Scanned(settled, list(messages[boundary:]), views, read),
            reuse=hit,
        )
        return read


def _reusing(
    known: _Scanned, messages: Sequence[BaseMessage], start: int, cache: ViewCache
) -> list[Message]:
    """The views of ``messages[start:]``, taken from ``known`` for the very same objects."""
    views: list[Message] = []
    for offset, message in enumerate(messages[start:]):
        if offset < len(known.tail) and known.tail[offset] is message:
            views.append(known.views[offset])
        else:
            views.append(cache.view(message))
    return views


class TokenMemo:
    """Tokens of a thread's messages, counted once each and carried from call to call (the
    messages converted through ``views``, the view cache of the middleware that owns it)."""

    def __init__(self, counter: TokenCounter, views: ViewCache) -> None:
        self.counter = counter
        self._memo: PrefixMemo[int] = PrefixMemo()
        self._views = views

    def count(self, messages: Sequence[BaseMessage]) -> int:
        scope = thread_scope()
        hit = self._memo.take(scope, messages)
        start, known = (hit.n, hit.value) if hit is not None else (0, 0)
        views = views_of(messages, start, cache=self._views)
        total = known + sum(message_tokens(m, self.counter) for m in views)
        self._memo.put(scope, messages, len(messages), total, reuse=hit)
        return total
