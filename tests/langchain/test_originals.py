"""Where originals live and what ``read_original`` answers, in a real ``create_agent``.

Without a store of its own, tokenlean keeps originals in the agent's LangGraph store
(``create_agent(..., store=...)``) when it has one, so they survive what the agent's state
survives: a restart is tested in two processes over the same SQLite files. A handle that is not
found is told apart: evicted from memory, gone with a process, or never there.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from tests.data import ROOT
from tests.langchain._agents import coding_agent
from tokenlean.langchain import ToolOutputShorteningMiddleware, recommended_middleware
from tokenlean.langchain.retrieval import make_retrieval_tool
from tokenlean.langchain.store import StoreChoice
from tokenlean.store import STORE_NAMESPACE, InMemoryOriginalStore, Original

LOG = "\n".join(
    [*(f"job {i}: stage {i % 6} finished in {i % 11}.{i % 7}s" for i in range(300)), "ERROR: x"]
)
SCRIPT = "\n".join(f"print('step {i}', {i} * {i})" for i in range(60))
MARKER = re.compile(r'read_original\("([oi]\d{12})"(?:, "(\d+)-(\d+)")?\)')


@tool
def run(command: str) -> str:
    """Run a shell command."""
    return LOG


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(
        "", id=f"ai-{call_id}", tool_calls=[{"name": name, "args": args, "id": call_id}]
    )


def cfg(thread: str = "t1") -> Any:
    return {"configurable": {"thread_id": thread}}


def handles(messages: list[BaseMessage]) -> list[str]:
    """Handles named by omission markers in the tool results and tool calls of ``messages``."""
    text = "".join(
        str(m.content) if isinstance(m, ToolMessage) else json.dumps(getattr(m, "tool_calls", []))
        for m in messages
        if not (isinstance(m, ToolMessage) and m.name == "read_original")
    )
    return [found.group(1) for found in MARKER.finditer(text.replace('\\"', '"'))]


def ask(handle: str, call_id: str = "r1") -> AIMessage:
    return call("read_original", {"handle": handle}, call_id)


def answer(messages: list[BaseMessage], call_id: str = "r1") -> str:
    return next(
        str(m.content) for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == call_id
    )


def test_originals_survive_a_restart_in_the_agents_sqlite_store(tmp_path: Path) -> None:
    def phase(name: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "tests.langchain.restart_agent", name, str(tmp_path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result

    first = phase("first")
    second = phase("second")  # a new process: nothing of the first is in memory
    assert second["handle"] == first["handle"]
    assert first["follows"] == [True, True] and second["follows"] == [True, True]
    assert second["answer"] == "\n".join(second["expected"])
    assert len(second["expected"]) > 100


def test_without_an_agent_store_a_restart_is_told_apart_from_a_wrong_handle(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "checkpoints.db")
    with SqliteSaver.from_conn_string(path) as saver:
        agent, first = coding_agent(
            [call("run", {"command": "make"}, "c1"), AIMessage("done")],
            tools=[run],
            # StoreChoice(): what a fresh process has (its own memory, no agent store)
            middleware=[ToolOutputShorteningMiddleware(store=StoreChoice())],
            checkpointer=saver,
        )
        agent.invoke({"messages": [HumanMessage("go")]}, cfg())
    (handle,) = set(handles(first.calls[1].messages))
    with SqliteSaver.from_conn_string(path) as saver:  # a new middleware: empty memory
        agent, second = coding_agent(
            [ask(handle), ask("o000000000000", "r2"), AIMessage("ok")],
            tools=[run],
            middleware=[ToolOutputShorteningMiddleware(store=StoreChoice())],
            checkpointer=saver,
        )
        agent.invoke({"messages": [HumanMessage("again")]}, cfg())
    messages = second.calls[-1].messages
    assert answer(messages, "r1") == (
        f"The original {handle!r} is no longer kept (it was held in the memory of a process "
        "that has ended); only the shortened text is left."
    )
    assert answer(messages, "r2") == "No original with handle 'o000000000000' in this conversation."


def test_the_agents_store_keeps_outputs_and_inputs_of_the_recommended_stack() -> None:
    backing = InMemoryStore()
    agent, model = coding_agent(
        [
            call("run", {"command": f"python -c '{SCRIPT}'"}, "c1"),
            lambda messages: ask(sorted(handles(messages))[0]),  # the input's handle: "i..."
            lambda messages: ask(sorted(handles(messages))[-1], "r2"),  # the output's: "o..."
            AIMessage("done"),
        ],
        tools=[run],
        middleware=recommended_middleware("anthropic"),
        store=backing,
    )
    agent.invoke({"messages": [HumanMessage("go")]}, cfg("w1"))
    kept = {item.key: item.value["text"] for item in backing.search((*STORE_NAMESPACE, "w1"))}
    assert sorted(k[0] for k in kept) == ["i", "o"]
    assert LOG in kept.values() and any(SCRIPT in text for text in kept.values())
    messages = model.calls[-1].messages
    assert "print('step 30', 30 * 30)" in answer(messages, "r1")
    assert answer(messages, "r2").endswith("301: ERROR: x")


async def test_the_async_path_uses_the_agents_store_too() -> None:
    backing = InMemoryStore()
    middleware = ToolOutputShorteningMiddleware()
    in_memory = len(middleware.stores.memory)  # the process's memory, shared by shorteners
    agent, model = coding_agent(
        [
            call("run", {"command": "make"}, "c1"),
            lambda messages: ask(handles(messages)[0]),
            AIMessage("done"),
        ],
        tools=[run],
        middleware=[middleware],
        store=backing,
    )
    await agent.ainvoke({"messages": [HumanMessage("go")]}, cfg("a1"))
    (item,) = backing.search((*STORE_NAMESPACE, "a1"))
    assert item.value["text"] == LOG
    assert len(middleware.stores.memory) == in_memory  # nothing went to process memory
    assert answer(model.calls[-1].messages).endswith("301: ERROR: x")


def test_a_store_given_to_tokenlean_wins_over_the_agents() -> None:
    backing = InMemoryStore()
    mine = InMemoryOriginalStore()
    agent, model = coding_agent(
        [call("run", {"command": "make"}, "c1"), lambda m: ask(handles(m)[0]), AIMessage("done")],
        tools=[run],
        middleware=[ToolOutputShorteningMiddleware(store=mine)],
        store=backing,
    )
    agent.invoke({"messages": [HumanMessage("go")]}, cfg())
    assert len(mine) == 1 and backing.search(STORE_NAMESPACE) == []
    assert answer(model.calls[-1].messages).endswith("301: ERROR: x")


def test_an_evicted_original_is_told_apart_from_a_wrong_handle() -> None:
    tiny = InMemoryOriginalStore(max_bytes_per_thread=1_000, max_bytes=1_000)  # LOG is larger
    agent, model = coding_agent(
        [
            call("run", {"command": "make"}, "c1"),
            lambda messages: ask(handles(messages)[0]),
            ask("o123456789012", "r2"),
            ask("not a handle", "r3"),
            AIMessage("done"),
        ],
        tools=[run],
        middleware=[ToolOutputShorteningMiddleware(store=tiny)],
    )
    agent.invoke({"messages": [HumanMessage("go")]}, cfg())
    messages = model.calls[-1].messages
    (handle,) = set(handles(messages))
    assert answer(messages, "r1") == (
        f"The original {handle!r} was dropped from memory to bound its size; only the "
        "shortened text is left."
    )
    assert answer(messages, "r2") == "No original with handle 'o123456789012' in this conversation."
    assert answer(messages, "r3") == "No original with handle 'not a handle' in this conversation."


def test_outside_a_graph_the_tool_answers_without_failing() -> None:
    store = InMemoryOriginalStore()
    store.put("t", Original("o1", "x"))
    reader = make_retrieval_tool(store)
    assert reader.invoke({"handle": "o1"}) == "No original is kept outside a conversation thread."


class _CountedStore(InMemoryStore):
    """A real ``InMemoryStore`` that records how many puts each batch it is sent holds."""

    def __init__(self) -> None:
        super().__init__()
        self.puts: list[int] = []

    def batch(self, ops: Any) -> Any:
        return super().batch(_recorded(ops, self.puts))

    async def abatch(self, ops: Any) -> Any:
        return await super().abatch(_recorded(ops, self.puts))


def _recorded(ops: Any, puts: list[int]) -> list[Any]:
    """``ops`` as a list, with how many of them are puts appended to ``puts`` (when any)."""
    ops = list(ops)
    if count := sum(isinstance(op, PutOp) for op in ops):
        puts.append(count)
    return ops


@tool
def run_one(command: str) -> str:
    """Run a shell command."""
    return f"{LOG}\n{command}"


FIVE_CALLS = AIMessage(
    "",
    tool_calls=[
        {"name": "run_one", "args": {"command": f"make {i}"}, "id": f"c{i}"} for i in range(5)
    ],
)


@pytest.mark.parametrize("run_async", [False, True], ids=["sync", "async"])
def test_a_turn_of_parallel_results_is_one_batch_of_the_agents_store(run_async: bool) -> None:
    """Five results shortened in one turn reach the agent's store in one batch (one
    transaction of an SQL store, one round trip to a server's), not a put each."""
    backing = _CountedStore()
    agent, _ = coding_agent(
        [FIVE_CALLS, AIMessage("done")],
        tools=[run_one],
        middleware=[ToolOutputShorteningMiddleware()],
        store=backing,
    )
    request = {"messages": [HumanMessage("go")]}
    if run_async:
        asyncio.run(agent.ainvoke(request, cfg("p1")))
    else:
        agent.invoke(request, cfg("p1"))
    assert backing.puts == [5]
    kept = sorted(item.value["text"] for item in backing.search((*STORE_NAMESPACE, "p1")))
    assert kept == [f"{LOG}\nmake {i}" for i in range(5)]


async def test_an_async_sqlite_store_takes_a_turn_in_one_batch_of_its_own(tmp_path: Path) -> None:
    """``AsyncSqliteStore`` has its own ``aput``, which batches what is awaited together: a
    turn's five originals are awaited at once, so they go in one ``abatch``, not five."""
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    batches: list[int] = []

    class Counted(AsyncSqliteStore):
        async def abatch(self, ops: Any) -> Any:
            return await super().abatch(_recorded(ops, batches))

    async with Counted.from_conn_string(str(tmp_path / "store.db")) as backing:
        await backing.setup()
        agent, _ = coding_agent(
            [FIVE_CALLS, AIMessage("done")],
            tools=[run_one],
            middleware=[ToolOutputShorteningMiddleware()],
            store=backing,
        )
        await agent.ainvoke({"messages": [HumanMessage("go")]}, cfg("s1"))
        kept = await backing.asearch((*STORE_NAMESPACE, "s1"))
    assert batches == [5]
    assert sorted(item.value["text"] for item in kept) == [f"{LOG}\nmake {i}" for i in range(5)]
