"""``read_original``: the one tool through which an agent reads back what tokenlean cut.

A handle names an original kept in an :class:`~tokenlean.store.OriginalStore` (a shortened
tool result or tool input), always in the calling thread's scope, and in the store the
middleware that kept it chose (:class:`~tokenlean.store.StoreChoice`: the one given, else the
agent's own store, which LangGraph hands the tool through its ``ToolRuntime``, else memory). A
tool call id names a result that :class:`~tokenlean.langchain.ContextEditorMiddleware` cleared
from the request: the agent's state still holds it whole, so the tool reads it from there.

A handle that is not found gets one of three answers: it was evicted from memory, it was kept
once (the conversation names it) but is gone (a restart of a process that held it in memory), or
there is no such handle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolRuntime
from pydantic import BaseModel, ConfigDict

from tokenlean.langchain.helpers import thread_scope
from tokenlean.store import (
    RETRIEVAL_TOOL,
    EvictingStore,
    Original,
    OriginalStore,
    StoreChoice,
    excerpt,
    looks_like_handle,
)
from tokenlean.transcript import content_text

_DESCRIPTION = (
    "Read the original of a shortened or cleared tool result: pass the handle (or tool call "
    "id) its marker names; give `lines` (e.g. '120-159') or `pattern` (text to look for), or "
    "neither for all of it."
)


class ReadOriginalArgs(BaseModel):
    """Arguments of the retrieval tool (described in the tool's description, to stay short)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    handle: str
    lines: str = ""
    pattern: str = ""
    # Injected by LangGraph's tool node (state, config, the agent's store); never in the schema
    # the model sees. ``None`` when the tool is called outside a graph.
    runtime: ToolRuntime = None  # type: ignore[assignment]


def make_retrieval_tool(
    store: OriginalStore | StoreChoice, *, name: str = RETRIEVAL_TOOL
) -> BaseTool:
    """A tool that reads originals from ``store`` (a store, or the :class:`StoreChoice` of the
    middleware that keeps them), only ever in the calling thread's scope."""
    choice = StoreChoice.of(store)

    # ``runtime`` is injected by LangGraph's tool node (state, config and the agent's store).
    def read(handle: str, runtime: Any = None, lines: str = "", pattern: str = "") -> str:
        found_in, scope, key = _where(choice, runtime, handle)
        found = found_in.get(scope, key) if scope is not None else None
        return _answer(found, found_in, runtime, (name, key, lines, pattern), scope)

    async def aread(handle: str, runtime: Any = None, lines: str = "", pattern: str = "") -> str:
        found_in, scope, key = _where(choice, runtime, handle)
        found = await found_in.aget(scope, key) if scope is not None else None
        return _answer(found, found_in, runtime, (name, key, lines, pattern), scope)

    return StructuredTool.from_function(
        func=read,
        coroutine=aread,
        name=name,
        description=_DESCRIPTION,
        args_schema=ReadOriginalArgs,
    )


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
) -> str:
    """The tool's reply to ``ask`` (its own name, the handle, lines, pattern); sync and async."""
    tool, handle, lines, pattern = ask
    state = getattr(runtime, "state", None)
    found = found or _from_state(state, handle)
    if found is None and scope is None:
        return "No original is kept outside a conversation thread."
    if found is None:
        return _missing(store, _messages(state), tool, handle, scope or "")
    try:
        return excerpt(found.text, lines=lines or None, pattern=pattern or None)
    except ValueError as exc:
        return str(exc)


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
