"""How an AgentScope reply is asked to wrap up: what the budget and the loop guard share.

Wrapping up means the next model call may call no tool, with one exception AgentScope's own
budget makes too: a reply that still owes a structured output can only end by calling the
structured-output tool, so that tool alone is offered (forced only if the agent forced it:
providers reject a forced ``tool_choice`` in thinking mode).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentscope.message import HintBlock
from agentscope.tool import ToolChoice

if TYPE_CHECKING:
    from agentscope.agent import Agent

__all__ = ["STRUCTURED_OUTPUT_TOOL", "append_hint", "structured_output_pending", "wrap_up_choice"]

#: The tool an AgentScope agent answers a structured-output request with (its
#: ``_GenerateStructuredOutput.name``; the class is private, so the name is written here).
STRUCTURED_OUTPUT_TOOL = "GenerateStructuredOutput"


def structured_output_pending(agent: Agent) -> bool:
    """Whether this reply was asked for a structured output it has not produced yet."""
    reply = agent.state.reply_context
    return reply.structured_schema is not None and reply.structured_output is None


def wrap_up_choice(agent: Agent, current: object) -> ToolChoice:
    """The ``tool_choice`` of a wrap-up call (module docstring); ``current`` is the one the
    call was going to be made with."""
    if not structured_output_pending(agent):
        return ToolChoice(mode="none")
    forced = getattr(current, "mode", None) == STRUCTURED_OUTPUT_TOOL
    return ToolChoice(
        mode=STRUCTURED_OUTPUT_TOOL if forced else "auto", tools=[STRUCTURED_OUTPUT_TOOL]
    )


def append_hint(agent: Agent, text: str, block_id: str) -> None:
    """Append ``text`` as a hint to the reply's message (a new one if the reply has none yet):
    new bytes at the end of the prompt, so nothing already sent changes."""
    block: Any = HintBlock(hint=text, id=block_id)
    agent.state.append_context(agent.name, [block])
