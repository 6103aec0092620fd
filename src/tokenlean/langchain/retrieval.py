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
for it to read (:class:`~tokenlean.langchain._retrieval_gate.RetrievalGate`): an agent whose
outputs never need shortening pays nothing, and the call that first offers it re-writes the
prompt cache once, which that call's cuts must pay for; a marker names the tool only in a
request that lists it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import ToolRuntime
from pydantic import BaseModel, ConfigDict, PrivateAttr

from tokenlean.langchain._helpers import (
    thread_scope,
)
from tokenlean.langchain.store import StoreChoice
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
from tokenlean.transcript import content_text

__all__ = [
    "ReadOriginalArgs",
    "is_retrieval_tool",
    "make_retrieval_tool",
    "read_back",
    "retrieval_tool",
    "same_tool",
    "shared_choice",
]

_DESCRIPTION = retrieval_description(call_ids=True)


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
    tests (a copy LangChain makes is still one), and it knows what it reads (:func:`same_tool`)."""

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


def same_tool(tool: object, other: BaseTool) -> bool:
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
