"""``read_original`` for an AgentScope agent: reads back what the shortening middleware cut.

The shortening middleware keeps each original in its store under the handle its markers name
(scope ``""``, see :mod:`tokenlean.history`); a result the context editor cleared is still
whole in the agent's memory (the editor edits requests only), and its placeholder names the
tool call id as the handle, so the tool reads that from the agent's state. It answers as the
other adapters' tools do: the lines the markers count, a range, or a pattern. It only reads, so
it is allowed without asking.
"""

from __future__ import annotations

from typing import Any

from agentscope.message import ToolResultBlock
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool

from tokenlean import checks
from tokenlean.agentscope._view import result_text
from tokenlean.history import SCOPE, dropped, read_back_answer
from tokenlean.store import RETRIEVAL_TOOL, Original, OriginalStore, retrieval_description

__all__ = ["read_original_tool"]

_DESCRIPTION = retrieval_description(call_ids=True)


def read_original_tool(store: OriginalStore, *, name: str = RETRIEVAL_TOOL) -> FunctionTool:
    """An AgentScope tool reading originals from ``store``.

    The shortening middleware adds it to the agent's toolkit before the first model call
    (the tool list sits at the front of the prompt, so adding it mid-run would re-write the
    whole prompt cache); give it to ``Toolkit(tools=[...])`` yourself to hold it from the start.
    """
    checks.identifier(name, "name")
    if not isinstance(store, OriginalStore):
        raise ValueError(f"store must be an OriginalStore (put/get), got {store!r}")

    async def read_original(
        handle: str, lines: str = "", pattern: str = "", _agent_state: Any = None
    ) -> str:
        # No docstring: FunctionTool would turn its arguments into schema text the other
        # adapters' tools do not send (the description says what each argument is).
        key = handle.strip()
        found = _in_memory(_agent_state, key) or await store.aget(SCOPE, key)
        evicted = found is None and dropped(store, key)
        return read_back_answer(found, handle, lines, pattern, evicted=evicted)

    return FunctionTool(
        read_original,  # type: ignore[arg-type]  # FunctionTool wraps a plain str result too
        name=name,
        description=_DESCRIPTION,
        is_read_only=True,
        is_state_injected=True,
        permission=PermissionDecision(
            behavior=PermissionBehavior.ALLOW, message=f"{name} only reads kept originals."
        ),
    )


def _in_memory(state: Any, handle: str) -> Original | None:
    """The result of call ``handle`` as the agent's memory holds it, if it does (a result the
    context editor cleared from requests)."""
    for msg in reversed(getattr(state, "context", None) or []):
        for block in msg.content if msg.role == "assistant" else ():
            if isinstance(block, ToolResultBlock) and block.id == handle:
                text = result_text(block)
                return Original(handle, text, block.name, handle) if text is not None else None
    return None
