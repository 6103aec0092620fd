"""What the AgentScope adapter's tests share: the skip, a reply runner, what was sent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from agentscope.agent import Agent
from agentscope.message import Msg, ToolResultBlock, UserMsg

from tokenlean.testing.agentscope import AgentScopeCall


def ask(agent: Agent, text: str = "run the tests") -> Msg:
    """One reply of ``agent`` to a user message (run to its end)."""
    return asyncio.run(agent.reply(UserMsg("user", text)))


def results(call: AgentScopeCall) -> list[str]:
    """The text of every tool result the model was sent in ``call`` (Anthropic's format)."""
    out: list[str] = []
    for message in call.messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                out.append(inner if isinstance(inner, str) else _joined(inner))
    return out


def _joined(blocks: Any) -> str:
    return "\n".join(b.get("text", "") for b in blocks or () if isinstance(b, dict))


def memory_results(agent: Agent) -> list[ToolResultBlock]:
    return [b for m in agent.state.context for b in m.content if isinstance(b, ToolResultBlock)]


def sent_json(calls: Sequence[AgentScopeCall]) -> list[str]:
    return [json.dumps(list(c.messages), sort_keys=True, default=str) for c in calls]
