"""tokenlean.testing: the scripted model, a real agent around it, the prefix checks, and the
request bodies and fake upstream that need no framework."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

import tokenlean.testing as testing
from tokenlean.raw import bodies
from tokenlean.testing import (
    RecordedCall,
    ScriptedChatModel,
    assert_prefix_kept,
    prefix_breaks,
    scripted_agent,
)
from tokenlean.transcript import Message, ToolCall


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _turns(n: int) -> list[AIMessage]:
    calls = [
        AIMessage(
            "", id=f"a{i}", tool_calls=[{"id": f"c{i}", "name": "lookup", "args": {"key": f"k{i}"}}]
        )
        for i in range(n)
    ]
    return [*calls, AIMessage("done", id="final")]


class _RewriteFirstResult(AgentMiddleware):  # type: ignore[type-arg]
    """Rewrites the first tool result in every request from the third call on."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def wrap_model_call(self, request: ModelRequest, handler: Any) -> Any:  # type: ignore[type-arg]
        self.calls += 1
        if self.calls >= 3:
            messages = [
                m.model_copy(update={"content": "edited"})
                if isinstance(m, ToolMessage) and m.tool_call_id == "c0"
                else m
                for m in request.messages
            ]
            request = request.override(messages=messages)
        return handler(request)


def _run(middleware: list[Any]) -> ScriptedChatModel:
    agent, model = scripted_agent(_turns(4), tools=[lookup], middleware=middleware)
    agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": "t"}})
    return model


def test_the_scripted_agent_replays_turns_and_records_requests() -> None:
    model = _run([])
    assert len(model.calls) == 5 and all(isinstance(c, RecordedCall) for c in model.calls)
    assert [t["function"]["name"] for t in model.calls[0].tools] == ["lookup"]
    last = model.calls[-1].messages
    assert isinstance(last[-1], ToolMessage) and last[-1].content == "value of k3"
    assert model.calls[-1].response is not None and model.calls[-1].response.content == "done"


def test_no_middleware_keeps_the_prefix() -> None:
    model = _run([])
    assert prefix_breaks(model) == []
    assert_prefix_kept(model)


def test_a_rewrite_of_a_sent_message_is_found_with_its_call_and_position() -> None:
    model = _run([_RewriteFirstResult()])
    assert prefix_breaks(model) == [(2, 2)]  # call 2 changed message 2 (human, ai, result)
    with pytest.raises(AssertionError, match="call 2 at message 2"):
        assert_prefix_kept(model)
    assert_prefix_kept(model, allowed=[2])
    with pytest.raises(AssertionError):
        assert_prefix_kept(model, allowed=[2, 3])  # an allowed break that did not happen fails


def test_the_bodies_and_the_fake_upstream_need_no_framework() -> None:
    """A proxy or SDK user tests with them without LangChain (nor the proxy's Starlette)."""
    code = (
        "import sys, tokenlean.testing, tokenlean.raw.bodies, tokenlean.testing.upstream\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(sys.argv[1:])))"
    )
    frameworks = ["langchain", "langchain_core", "langgraph", "starlette", "uvicorn", "httpx"]
    done = subprocess.run(
        [sys.executable, "-c", code, *frameworks], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_the_agent_names_load_on_use_and_others_are_missing() -> None:
    names = ["RecordedCall", "ScriptedChatModel", "assert_prefix_kept", "prefix_breaks"]
    assert sorted(testing.__all__) == sorted([*names, "scripted_agent"])
    assert testing.ScriptedChatModel is ScriptedChatModel and "scripted_agent" in dir(testing)
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = testing.no_such_name


def test_anthropic_requests_resend_the_history_before_each_assistant_turn() -> None:
    call = ToolCall(id="c1", name="lookup", args={"key": "k"})
    transcript = [
        Message("system", "be brief"),
        Message("user", "go"),
        Message("assistant", "", tool_calls=[call]),
        Message("tool", "value", tool_call_id="c1"),
        Message("assistant", "done"),
    ]
    sent = list(bodies.anthropic_requests(transcript))
    assert [len(b["messages"]) for b in sent] == [1, 3] and sent[0]["system"] == "be brief"
    newest = [m["content"][-1] for m in sent[1]["messages"]]
    assert [b.get("cache_control") for b in newest] == [None, None, dict(bodies.CACHE_CONTROL)]
    # the same history as one body of each API, without the breakpoint a client moves
    for api in ("anthropic", "openai_chat", "openai_responses"):
        request = bodies.mark_newest(api, bodies.body(api, transcript[:4]))
        assert bodies.strip_cache_control(request) == bodies.body(api, transcript[:4])
    assert bodies.call_points(transcript) == [2, 4]
