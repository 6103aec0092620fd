"""A scripted AgentScope agent (needs the ``agentscope`` extra): no network, no mocks.

The same pieces the replay drives AgentScope with (:mod:`tokenlean.replay.agentscope`), for
testing an agent stack: :class:`ScriptedChatModel` (a real ``ChatModelBase`` that formats each
request with a real AgentScope formatter, records it and answers with the next scripted turn),
:class:`RecordedTool`, :func:`scripted_agent`, :func:`replay_messages` and
:func:`prefix_breaks`::

    agent, model = scripted_agent([turn(calls=[("c1", "bash", {"cmd": "ls"})]), turn("done")],
                                  tools=[RecordedTool("bash", ["a\\nb"])],
                                  middlewares=recommended_middleware())
    await agent.reply(UserMsg("user", "go"))
    assert prefix_breaks(model) == []
"""

from __future__ import annotations

from tokenlean.replay.agentscope import (
    AgentScopeCall,
    RecordedTool,
    ScriptedChatModel,
    Turn,
    prefix_breaks,
    replay_messages,
    scripted_agent,
    turn,
)

__all__ = [
    "AgentScopeCall",
    "RecordedTool",
    "ScriptedChatModel",
    "Turn",
    "prefix_breaks",
    "replay_messages",
    "scripted_agent",
    "turn",
]
