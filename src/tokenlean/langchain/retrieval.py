"""``read_original``: the one tool through which an agent reads back what tokenlean cut.

A handle names an original kept in an :class:`~tokenlean.store.OriginalStore` (a shortened
tool result or tool input), always in the calling thread's scope. A tool call id names a result
that :class:`~tokenlean.langchain.ContextEditorMiddleware` cleared from the request: the agent's
state still holds it whole, so the tool reads it from there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.prebuilt import InjectedState
from pydantic import BaseModel

from tokenlean.langchain.helpers import thread_scope
from tokenlean.store import RETRIEVAL_TOOL, Original, OriginalStore, excerpt
from tokenlean.transcript import content_text

_DESCRIPTION = (
    "Read the original of a shortened or cleared tool result: pass the handle (or tool call "
    "id) its marker names; give `lines` (e.g. '120-159') or `pattern` (text to look for), or "
    "neither for all of it."
)


class ReadOriginalArgs(BaseModel):
    """Arguments of the retrieval tool (described in the tool's description, to stay short)."""

    handle: str
    lines: str = ""
    pattern: str = ""
    state: Annotated[Any, InjectedState] = None


def make_retrieval_tool(store: OriginalStore, *, name: str = RETRIEVAL_TOOL) -> BaseTool:
    """A tool that reads originals from ``store``, only ever in the calling thread's scope."""

    # ``config`` is injected by LangChain (it looks for a parameter typed exactly RunnableConfig)
    def read(
        handle: str, config: RunnableConfig, lines: str = "", pattern: str = "", state: Any = None
    ) -> str:
        scope = thread_scope(config)
        found = store.get(scope, handle.strip()) if scope is not None else None
        return _answer(found or _from_state(state, handle), handle, lines, pattern, scope)

    async def aread(
        handle: str, config: RunnableConfig, lines: str = "", pattern: str = "", state: Any = None
    ) -> str:
        scope = thread_scope(config)
        found = await store.aget(scope, handle.strip()) if scope is not None else None
        return _answer(found or _from_state(state, handle), handle, lines, pattern, scope)

    return StructuredTool.from_function(
        func=read,
        coroutine=aread,
        name=name,
        description=_DESCRIPTION,
        args_schema=ReadOriginalArgs,
    )


def _from_state(state: Any, handle: str) -> Original | None:
    """A tool result the agent's state holds under the tool call id ``handle``."""
    messages = state.get("messages") if isinstance(state, Mapping) else None
    if not isinstance(messages, Sequence):
        return None
    key = handle.strip()
    for message in reversed(messages):
        if isinstance(message, ToolMessage) and message.tool_call_id == key:
            return Original(key, content_text(message.content), message.name, key)
    return None


def _answer(
    found: Original | None, handle: str, lines: str, pattern: str, scope: str | None
) -> str:
    if found is None and scope is None:
        return "No original is kept outside a conversation thread."
    if found is None:
        return f"No original with handle {handle!r} in this conversation."
    try:
        return excerpt(found.text, lines=lines or None, pattern=pattern or None)
    except ValueError as exc:
        return str(exc)
