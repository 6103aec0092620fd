"""What every tokenlean middleware needs from LangChain, in one place.

The conversation thread a call belongs to, the tool schemas a request will send, the
``tool_choice`` that means "answer now", and the steps of a call that keeps originals before it
commits its edits. The per-thread memos that carry a middleware's work on a growing transcript
from one call to the next are :mod:`._memos`'s.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import fields, is_dataclass
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
from tokenlean.store import aput_all, put_all

__all__ = [
    "KeptBeforeCommit",
    "RequestRewriter",
    "SchemaCache",
    "Update",
    "last_ai_index",
    "merge_records",
    "middleware_name",
    "no_tool_choice",
    "state_hooks",
    "thread_scope",
    "tool_schemas",
]

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
