"""``read_original`` for a pydantic-ai agent: reads back what the history processor cut.

The processor keeps each original in its store under the handle its markers name (scope
``""``: a pydantic-ai history carries no thread id the tool could also see, and handles are
digests of the call and the text, so conversations sharing a store do not collide). The tool
answers as the LangChain one does: the lines the markers count, a range, or a pattern.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Tool
from pydantic_ai.tools import ToolPrepareFunc

from tokenlean import checks
from tokenlean.history import SCOPE, dropped, read_back_answer
from tokenlean.store import RETRIEVAL_TOOL, OriginalStore, retrieval_description

__all__ = ["SCOPE", "read_original_tool"]

_DESCRIPTION = retrieval_description(call_ids=False)


def read_original_tool(
    store: OriginalStore,
    *,
    name: str = RETRIEVAL_TOOL,
    prepare: ToolPrepareFunc[Any] | None = None,
) -> Tool[Any]:
    """A pydantic-ai :class:`~pydantic_ai.Tool` reading originals from ``store``.

    Give it to the agent with the processor (``Agent(tools=[...])``), never mid-run:
    the tool list sits at the front of the prompt, so adding it mid-run would re-write the
    whole prompt cache. ``prepare`` (pydantic-ai's, run before each call) leaves it out of the
    runs it is not offered to.
    """
    checks.identifier(name, "name")
    if not isinstance(store, OriginalStore):
        raise ValueError(f"store must be an OriginalStore (put/get), got {store!r}")

    async def read_original(handle: str, lines: str = "", pattern: str = "") -> str:
        found = await store.aget(SCOPE, handle.strip())
        evicted = found is None and dropped(store, handle)
        return read_back_answer(found, handle, lines, pattern, evicted=evicted)

    return Tool(
        read_original, name=name, description=_DESCRIPTION, takes_ctx=False, prepare=prepare
    )
