"""What users and tokenlean's own tests share to test an agent stack: no mocks, no network.

- a scripted LangChain agent (needs the ``langchain`` extra): :class:`ScriptedChatModel`, a chat
  model that replays given assistant turns and records exactly what it was sent;
  :func:`scripted_agent`, a real ``create_agent`` graph around one; :func:`prefix_breaks` and
  :func:`assert_prefix_kept`, which calls, if any, changed bytes the model had already been sent
  (each such call re-writes the provider's prompt cache);
- :mod:`tokenlean.raw.bodies`: the request bodies a client speaking a provider API would send
  for a recorded transcript (core only, no extra);
- :mod:`tokenlean.testing.upstream`: a fake provider on 127.0.0.1 that records every request and
  answers from a script (standard library only, no extra).

The agent names load on first use, so the two submodules work without LangChain installed::

    agent, model = scripted_agent([AIMessage("", tool_calls=[...]), AIMessage("done")],
                                  tools=[my_tool], middleware=recommended_middleware())
    agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t"}})
    assert_prefix_kept(model)          # no call rewrote what an earlier call sent
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenlean._lazy import lazy_names

if TYPE_CHECKING:
    from tokenlean.replay import RecordedCall, ScriptedChatModel
    from tokenlean.testing._agent import assert_prefix_kept, prefix_breaks, scripted_agent

__all__ = [
    "RecordedCall",
    "ScriptedChatModel",
    "assert_prefix_kept",
    "prefix_breaks",
    "scripted_agent",
]


# the agent names load (with LangChain) the first time one is asked for
__getattr__, __dir__ = lazy_names(__name__, {name: ("_agent", name) for name in __all__})
