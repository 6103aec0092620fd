"""read_original shared by the shorteners, offered only when it pays, and what read-backs teach."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest
from langchain.agents.middleware import ModelRequest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool, tool

from tokenlean.cost import ANTHROPIC, OPENAI, offering_pays
from tokenlean.langchain import ToolInputShorteningMiddleware, ToolOutputShorteningMiddleware
from tokenlean.langchain.retrieval import (
    ReadOriginalArgs,
    is_retrieval_tool,
    make_retrieval_tool,
    retrieval_tool,
    same_tool,
    shared_choice,
)
from tokenlean.langchain.store import StoreChoice
from tokenlean.offering import FORGONE_KEY
from tokenlean.store import InMemoryOriginalStore
from tokenlean.testing import (
    ScriptedChatModel,
    assert_prefix_kept,
    prefix_breaks,
    scripted_agent,
)

LINES = [
    f"collected item {i}: module pkg.part_{i % 9} loaded in {i % 7}.{i % 10}s" for i in range(300)
]
LOG = "\n".join(
    [*LINES[:150], "FAILED tests/test_api.py::test_login - KeyError: 'token'", *LINES[150:]]
)
HANDLE = re.compile(r'read_original\("(o\d+)"')


@tool
def run_tests(target: str) -> str:
    """Run the test suite."""
    return LOG


@tool
def lookup(key: str) -> str:
    """Look a short fact up."""
    return f"{key}: 42"


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(
        "", id=f"ai-{call_id}", tool_calls=[{"name": name, "args": args, "id": call_id}]
    )


#: A system prompt as long as a coding agent's: the tool's schema is a negligible share of it.
LONG_SYSTEM = "You are a careful coding agent; read before you edit. " * 1500


def _tools(model: Any) -> list[list[str]]:
    return [[t["function"]["name"] for t in c.tools] for c in model.calls]


def _invoke(agent: Any, thread: str = "t") -> dict[str, Any]:
    return agent.invoke({"messages": [HumanMessage("go")]}, {"configurable": {"thread_id": thread}})


def _read_back(messages: list[Any]) -> AIMessage:
    handle = HANDLE.search(str(messages[-1].content))
    assert handle is not None, "the result was not shortened"
    return _call("read_original", {"handle": handle.group(1), "lines": "140-160"}, "r1")


def test_an_agent_with_short_results_is_never_offered_the_tool() -> None:
    turns = [_call("lookup", {"key": f"k{i}"}, f"c{i}") for i in range(5)]
    agent, model = scripted_agent(
        [*turns, AIMessage("done")], tools=[lookup], middleware=[ToolOutputShorteningMiddleware()]
    )
    _invoke(agent)
    assert all(names == ["lookup"] for names in _tools(model))
    assert_prefix_kept(model)  # exactly what no middleware would send


def test_shorteners_at_their_defaults_share_one_tool_and_one_store() -> None:
    inputs, outputs = ToolInputShorteningMiddleware(), ToolOutputShorteningMiddleware()
    assert inputs.store is outputs.store and inputs.tools[0] is outputs.tools[0]
    turns = [_call("run_tests", {"target": "all"}, "c1"), _read_back, AIMessage("done")]
    agent, model = scripted_agent(
        turns, tools=[run_tests], middleware=[inputs, outputs], system_prompt=LONG_SYSTEM
    )
    state = _invoke(agent)
    assert [names.count("read_original") for names in _tools(model)] == [1, 1, 1]
    answer = next(
        m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "r1"
    )
    assert "FAILED tests/test_api.py::test_login" in answer.content  # line 151 of the original
    assert prefix_breaks(model) == []  # offered from the first call: nothing re-written


def test_one_tool_per_store_choice_and_name_kept_by_the_choice() -> None:
    choice = StoreChoice()
    tool_ = retrieval_tool(choice)
    assert retrieval_tool(choice) is tool_ and is_retrieval_tool(tool_)
    assert retrieval_tool(choice, name="read_kept") is not tool_
    assert retrieval_tool(StoreChoice()) is not tool_  # another choice, another tool
    assert retrieval_tool(shared_choice()) is ToolOutputShorteningMiddleware().tools[0]


def _stores_run(inputs_store: Any, outputs_store: Any) -> tuple[list[list[str]], Any]:
    inputs = ToolInputShorteningMiddleware(store=inputs_store)
    outputs = ToolOutputShorteningMiddleware(store=outputs_store)
    turns = [_call("run_tests", {"target": "all"}, "c1"), _read_back, AIMessage("done")]
    agent, model = scripted_agent(
        turns, tools=[run_tests], middleware=[inputs, outputs], system_prompt=LONG_SYSTEM
    )
    state = _invoke(agent)
    answer = next(
        m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "r1"
    )
    return _tools(model), answer.content


def test_shorteners_given_one_store_offer_the_agent_one_tool() -> None:
    store = InMemoryOriginalStore()
    inputs, outputs = (
        ToolInputShorteningMiddleware(store=store),
        ToolOutputShorteningMiddleware(store=store),
    )
    # each has a choice of its own, so a tool of its own, but both read the one store
    assert same_tool(inputs.tools[0], outputs.tools[0])
    assert not same_tool(inputs.tools[0], retrieval_tool(InMemoryOriginalStore()))
    assert not same_tool(inputs.tools[0], retrieval_tool(store, name="read_kept"))
    offered, answer = _stores_run(store, store)
    assert [names.count("read_original") for names in offered] == [1, 1, 1]
    assert "FAILED tests/test_api.py::test_login" in answer
    # and they offer it exactly when middleware sharing one choice do
    choice = StoreChoice(InMemoryOriginalStore())
    assert (offered, answer) == _stores_run(choice, choice)


def test_a_gate_hides_the_tool_of_another_shortener_reading_its_store() -> None:
    store = InMemoryOriginalStore()
    inputs = ToolInputShorteningMiddleware(store=store, retrieval_tool=False)
    outputs = ToolOutputShorteningMiddleware(store=store)
    other = ToolOutputShorteningMiddleware(store=InMemoryOriginalStore())
    tools = [outputs.tools[0], run_tests]
    request = ModelRequest(model=ScriptedChatModel(), messages=[], tools=tools, state={})
    assert inputs._gate.hide(request).tools == [run_tests]  # not offered yet: hidden
    assert other._gate.hide(request).tools == tools  # it reads another store: not its own
    offered = request.override(state={"tokenlean_originals_offered": True})
    assert inputs._gate.hide(offered).tools == tools


def test_is_retrieval_tool_knows_the_tools_it_made_and_not_a_look_alike() -> None:
    made = make_retrieval_tool(StoreChoice())
    assert is_retrieval_tool(made) and is_retrieval_tool(made.model_copy())
    assert make_retrieval_tool(StoreChoice()) is not made  # a new tool each time
    look_alike = StructuredTool.from_function(
        func=made.func,
        name=made.name,
        description=made.description,
        args_schema=ReadOriginalArgs,
        response_format="content_and_artifact",
    )
    assert not is_retrieval_tool(look_alike) and not same_tool(look_alike, made)
    assert not is_retrieval_tool(run_tests)


def test_a_tool_of_the_agent_with_the_same_name_is_refused_naming_both() -> None:
    @tool
    def read_original(handle: str) -> str:
        """The agent's own tool."""
        return handle

    agent, _ = scripted_agent(
        [AIMessage("done")], tools=[read_original], middleware=[ToolOutputShorteningMiddleware()]
    )
    with pytest.raises(ValueError, match=r"read_original.*tokenlean's retrieval tool"):
        _invoke(agent)


def test_instances_set_differently_can_share_an_agent() -> None:
    first = ToolOutputShorteningMiddleware(only=["run_tests"])
    second = ToolOutputShorteningMiddleware(only=["lookup"], max_tokens=40)
    assert first.name != second.name and ToolOutputShorteningMiddleware().name == (
        "ToolOutputShorteningMiddleware"
    )
    agent, model = scripted_agent(
        [_call("run_tests", {"target": "a"}, "c1"), AIMessage("done")],
        tools=[run_tests, lookup],
        middleware=[first, second],
        system_prompt=LONG_SYSTEM,
    )
    _invoke(agent)
    assert HANDLE.search(str(model.calls[1].messages[-1].content))


def test_after_a_read_back_that_tool_is_shortened_less_then_not_at_all() -> None:
    turns = [
        _call("run_tests", {"target": "a"}, "c1"),
        _read_back,
        _call("run_tests", {"target": "b"}, "c2"),
        lambda messages: _call(
            "read_original", {"handle": HANDLE.findall(str(messages[-1].content))[0]}, "r2"
        ),
        _call("run_tests", {"target": "c"}, "c3"),
        AIMessage("done"),
    ]
    agent, model = scripted_agent(
        turns,
        tools=[run_tests],
        middleware=[ToolOutputShorteningMiddleware()],
        system_prompt=LONG_SYSTEM,
    )
    state = _invoke(agent)
    sent = {m.tool_call_id: str(m.content) for m in state["messages"] if isinstance(m, ToolMessage)}
    assert len(sent["c1"]) < len(sent["c2"]) < len(LOG)  # one read-back: four times the budget
    assert sent["c3"] == LOG  # two read-backs: left whole
    levels = agent.get_state({"configurable": {"thread_id": "t"}}).values
    assert levels["tokenlean_output_shortening_backoff"] == {"run_tests": 2}
    assert prefix_breaks(model) == []  # nothing already sent ever changed


def test_offering_never_pays_a_cache_rewrite_and_the_savings_must_cover_the_schema() -> None:
    common = {"schema": 100, "calls": 10}  # the schema costs 100 * (1.25 + 10 * 0.1) = 225
    # a warm cache is never re-written for the tool, early or late, whatever was saved
    assert not offering_pays(ANTHROPIC, prompt=2_000, new=1_800, banked=10_000, **common)
    assert not offering_pays(ANTHROPIC, prompt=60_000, new=500, banked=10**9, **common)
    # a cold one (every token new) is written anyway: the savings need only cover the schema
    assert offering_pays(ANTHROPIC, prompt=60_000, new=60_000, banked=225, **common)
    assert not offering_pays(ANTHROPIC, prompt=60_000, new=60_000, banked=224, **common)
    # nothing under 1,024 tokens is cached on OpenAI, so nothing is re-written there
    assert offering_pays(OPENAI, prompt=1_000, new=100, banked=201, **common)
    assert not offering_pays(OPENAI, prompt=5_000, new=100, banked=10**9, **common)


def _long_run(middleware: ToolOutputShorteningMiddleware) -> Any:
    """Six long test runs and an answer, in a short prompt (the schema is no small share)."""
    turns = [_call("run_tests", {"target": f"t{i}"}, f"c{i}") for i in range(6)]
    agent, model = scripted_agent(
        [*turns, AIMessage("done")], tools=[run_tests], middleware=[middleware]
    )
    _invoke(agent)
    return model


def assert_markers_name_only_tools_in_the_request(model: Any, tool: str = "read_original") -> None:
    """Every request whose messages name ``tool`` in a marker holds ``tool`` in its list."""
    for index, call in enumerate(model.calls):
        named = any(f'{tool}("' in str(m.content) for m in call.messages if m.type == "tool")
        listed = tool in [t["function"]["name"] for t in call.tools]
        assert listed or not named, f"call {index} names {tool} without offering it"


@tool
def build_log(target: str) -> str:
    """Print the whole build log (never shortened in these tests)."""
    return "\n".join(f"compiling unit {i} of {target}: ok in {i % 5}.{i % 7}s" for i in range(6000))


@tool
def run_suite(target: str) -> str:
    """Run one suite of the tests (each suite's lines its own, none shown before)."""
    return "\n".join(f"[{target}] {line}" for line in LOG.split("\n"))


def test_a_warm_cache_is_never_re_written_to_offer_the_tool_so_no_marker_names_it() -> None:
    """A short prompt, calls seconds apart: the tool never joins (that would re-write the
    cached prompt), so no marker may name it; the first log goes whole and each identical
    one after it as a pointer to it (a way back the request holds)."""
    model = _long_run(ToolOutputShorteningMiddleware(min_remaining_calls=0))
    assert all(names == ["run_tests"] for names in _tools(model))
    sent = [m.content for m in model.calls[-1].messages if m.type == "tool"]
    assert sent[0] == LOG and all("Same output as the earlier" in str(s) for s in sent[1:])
    assert_prefix_kept(model)
    assert_markers_name_only_tools_in_the_request(model)


def test_where_offering_does_not_pay_no_marker_names_the_tool_and_results_stay_whole() -> None:
    """A long prefix (a build log the agent keeps whole) makes re-writing the cache for the
    tool cost more than cutting a test log saves: the log is sent whole, as the agent has no
    way to read a cut part back, and the prompt's bytes never change."""
    turns = [
        _call("build_log", {"target": "all"}, "b1"),
        _call("run_tests", {"target": "all"}, "c1"),
        AIMessage("done"),
    ]
    middleware = ToolOutputShorteningMiddleware(never=["build_log"], min_remaining_calls=0)
    agent, model = scripted_agent(turns, tools=[build_log, run_tests], middleware=[middleware])
    state = _invoke(agent)
    assert all("read_original" not in names for names in _tools(model))
    sent = {m.tool_call_id: m.content for m in model.calls[-1].messages if m.type == "tool"}
    assert sent["c1"] == LOG
    assert not agent.get_state({"configurable": {"thread_id": "t"}}).values.get(
        "tokenlean_originals_offered"
    )
    assert_prefix_kept(model)
    assert len(state["messages"]) == 6


def test_the_tool_joins_at_a_call_whose_cache_went_cold() -> None:
    turns = [
        _call("build_log", {"target": "all"}, "b1"),
        _call("run_suite", {"target": "a"}, "c1"),
        _call("run_suite", {"target": "b"}, "c2"),
        AIMessage("done"),
    ]
    middleware = ToolOutputShorteningMiddleware(never=["build_log"], min_remaining_calls=0)
    times = iter([0.0, 1.0, 2.0, 2.0 + ANTHROPIC.cache_ttl + 1, *range(10_000, 10_010)])
    middleware._gate.rules = replace(
        middleware._gate.rules, clock=lambda: float(next(times))
    )  # the fourth call comes after a pause
    agent, model = scripted_agent(turns, tools=[build_log, run_suite], middleware=[middleware])
    _invoke(agent)
    assert [names.count("read_original") for names in _tools(model)] == [0, 0, 0, 1]
    sent = {m.tool_call_id: m.content for m in model.calls[-1].messages if m.type == "tool"}
    assert sent["c1"] == run_suite.invoke({"target": "a"})  # whole while it had no tool
    assert HANDLE.search(str(sent["c2"]))  # cut on the cold call, which lists the tool
    assert prefix_breaks(model) == [(3, -1)]  # the cold call's tool list
    assert_markers_name_only_tools_in_the_request(model)


def test_a_long_first_prompt_has_the_tool_from_the_first_call() -> None:
    turns = [_call("run_tests", {"target": "all"}, "c1"), AIMessage("done")]
    short, long_ = (
        scripted_agent(
            turns,
            tools=[run_tests],
            middleware=[ToolOutputShorteningMiddleware()],
            system_prompt=prompt,
        )
        for prompt in ("Be brief.", LONG_SYSTEM)
    )
    for agent, _ in (short, long_):
        _invoke(agent)
    assert [n.count("read_original") for n in _tools(short[1])] == [0, 0]  # a warm cache
    assert [n.count("read_original") for n in _tools(long_[1])] == [1, 1]
    assert_prefix_kept(long_[1])
    for _, model in (short, long_):
        assert_markers_name_only_tools_in_the_request(model)


def test_a_restored_history_whose_markers_name_the_tool_is_offered_it() -> None:
    """A history made elsewhere (another worker, a state from before the offer was kept) whose
    markers name ``read_original`` gets the tool, so the agent can follow them."""
    turns = [_call("run_tests", {"target": "all"}, "c1"), _read_back, AIMessage("done")]
    middleware = ToolOutputShorteningMiddleware(store=InMemoryOriginalStore())
    agent, model = scripted_agent(
        turns, tools=[run_tests], middleware=[middleware], system_prompt=LONG_SYSTEM
    )
    state = _invoke(agent)
    assert_markers_name_only_tools_in_the_request(model)
    answer = next(
        m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "r1"
    )
    assert "FAILED tests/test_api.py::test_login" in str(answer.content)
    # a new middleware (a new process) on the saved messages, the offer not in its state
    fresh = ToolOutputShorteningMiddleware(store=InMemoryOriginalStore())
    tools = [run_tests, *fresh.tools]
    request = ModelRequest(
        model=ScriptedChatModel(), messages=state["messages"], tools=tools, state={}
    )
    assert fresh._gate.hide(request).tools == tools
    bare = request.override(messages=[m for m in state["messages"] if m.type != "tool"])
    assert fresh._gate.hide(bare).tools == [run_tests]  # nothing names it: not offered


@tool
def shell(command: list[str]) -> str:
    """Run a command (answers as Codex CLI does: the output inside a JSON envelope)."""
    return json.dumps({"output": LOG.replace("\n", "\r\n"), "metadata": {"exit_code": 1}})


SPAN = re.compile(r'read_original\(\\"(o\d+)\\", \\"(\d+)-(\d+)\\"\)')


def test_an_envelope_is_shortened_inside_and_its_markers_read_back_those_lines() -> None:
    asked: list[tuple[int, int]] = []

    def read_back(messages: list[Any]) -> AIMessage:
        sent = str(messages[-1].content)
        match = SPAN.search(sent)
        assert match is not None, sent[:300]
        asked.append((int(match[2]), int(match[3])))
        return _call("read_original", {"handle": match[1], "lines": f"{match[2]}-{match[3]}"}, "r1")

    agent, model = scripted_agent(
        [
            _call("shell", {"command": ["bash", "-lc", "pytest -q"]}, "c1"),
            read_back,
            AIMessage("ok"),
        ],
        tools=[shell],
        middleware=[ToolOutputShorteningMiddleware(offer_tool="always")],
    )
    state = _invoke(agent)
    assert_prefix_kept(model)
    result = next(
        m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "c1"
    )
    envelope = json.loads(str(result.content))  # still the envelope, valid JSON
    assert envelope["metadata"] == {"exit_code": 1}
    assert "FAILED tests/test_api.py::test_login" in envelope["output"]
    assert len(envelope["output"]) < len(LOG)
    answer = next(
        m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "r1"
    )
    first, last = asked[0]
    lines = LOG.split("\n")
    got = str(answer.content).split("\n")
    # numbered as the marker counts them, the envelope's \r\n line ends read as lines
    assert (got[0], got[-1]) == (f"{first}: {lines[first - 1]}", f"{last}: {lines[last - 1]}")


def test_the_tool_joins_only_a_cold_call_whose_cuts_cover_its_schema() -> None:
    """Warm, never; cold, when this call's cut and the thread's rate of cuts it went without
    (per call) cover the schema over the calls to come."""
    middleware = ToolOutputShorteningMiddleware(min_remaining_calls=0)
    gate = middleware._gate
    gate.rules = replace(gate.rules, clock=lambda: 1_000.0)
    messages = [HumanMessage("context " * 2_000), AIMessage("ok")]
    warm, cold = {"tokenlean_called_at": 990.0}, {"tokenlean_called_at": 1.0}
    assert not gate.offer_now_pays({**warm, FORGONE_KEY: 10**6}, messages, extra=10**5)
    assert gate.offer_now_pays(cold, messages, extra=500)
    assert not gate.offer_now_pays(cold, messages, extra=gate.schema // 2)
    assert gate.offer_now_pays({**cold, FORGONE_KEY: 10 * gate.schema}, messages, extra=1)
    assert not gate.offer_now_pays({**cold, FORGONE_KEY: 10**6}, messages, extra=0)
