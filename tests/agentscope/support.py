"""What the AgentScope adapter's tests share: the skip, a long log, and a reply runner."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip(
    "agentscope", reason="needs the agentscope extra (pip install 'tokenlean[agentscope]')"
)

from agentscope.agent import Agent
from agentscope.message import Msg, ToolResultBlock, UserMsg

from tokenlean.testing.agentscope import AgentScopeCall

ERROR = "FAILED tests/test_api.py::test_refund - AssertionError: expected 200, got 500"
LOG = "\n".join(
    [f"tests/test_api.py::test_case_{i} PASSED [{i // 4}%]" for i in range(200)]
    + [ERROR]
    + [f"tests/test_api.py::test_case_{i} PASSED [{i // 4}%]" for i in range(200, 399)]
)
SCRIPT = "\n".join(
    ["python - <<'EOF'", *(f"print('step {i}', {i} * {i})" for i in range(150)), "EOF"]
)


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
