"""ToolInputShorteningMiddleware inside a real create_agent driven by a scripted model."""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver

from tests.data import TRAJECTORIES
from tokenlean.langchain._adapter import to_view
from tokenlean.langchain.input_shortening import ToolInputShorteningMiddleware
from tokenlean.langchain.output_shortening import ToolOutputShorteningMiddleware
from tokenlean.langchain.retrieval import retrieval_tool
from tokenlean.replay._engine import measure_replay, replay
from tokenlean.replay._formats import load_trajectory
from tokenlean.replay._metrics import PromptMeasurer
from tokenlean.shorten._inputs import InputShorteningSettings, argument_handle
from tokenlean.store import InMemoryOriginalStore, Original, excerpt
from tokenlean.testing import assert_prefix_kept, scripted_agent
from tokenlean.tokens import EstimateCounter
from tokenlean.transcript import mark_of


def _mark(message: Any) -> Any:
    """The mark input shortening left on a LangChain message (``None`` when it left none)."""
    return mark_of(to_view([message])[0], "input_shortening")


def _pop_mark(message: Any) -> Any:
    """Take the mark off ``message`` (in place), leaving the metadata as it was before it."""
    marks = message.response_metadata["tokenlean"]
    mark = marks.pop("input_shortening")
    if not marks:
        message.response_metadata.pop("tokenlean")
    return mark


SCRIPT = "\n".join(
    [
        "import numpy as np",
        "from astropy.modeling import models as m",
        "from astropy.modeling.separable import separability_matrix",
        *[
            f"print({i}, separability_matrix(m.Pix2Sky_TAN() & m.Linear1D({i}) & m.Linear1D(5)))"
            for i in range(50)
        ],
        "print('all done')",
    ]
)
SHORT = "print(1)"
HANDLE = re.compile(r'read_original\("(i\d{12})"\)')


@tool
def run_python(code: str) -> str:
    """Run a Python script."""
    return f"ran {len(code.splitlines())} lines: exit 0"


def turn(*calls: tuple[str, dict[str, Any], str], ai_id: str = "ai-1", **fields: Any) -> AIMessage:
    tool_calls = [{"name": name, "args": args, "id": cid} for name, args, cid in calls]
    return AIMessage(content=fields.pop("content", ""), id=ai_id, tool_calls=tool_calls, **fields)


#: A system prompt as long as a coding agent's (thousands of tokens): the retrieval tool's
#: schema is a negligible share of it, so the tool is offered from the first call.
LONG_SYSTEM = "You are a careful coding agent; read before you edit. " * 1500


def small(never: frozenset[str] = frozenset(), **kwargs: Any) -> ToolInputShorteningMiddleware:
    """The middleware with thresholds small enough for SCRIPT (4 head and 2 tail lines)."""
    settings = InputShorteningSettings(min_tokens=50, head_lines=4, tail_lines=2, never=never)
    return ToolInputShorteningMiddleware(settings=settings, **kwargs)


def cfg(thread: str = "t1") -> Any:
    return {"configurable": {"thread_id": thread}}


def by_id(messages: Sequence[BaseMessage], message_id: str) -> AIMessage:
    found = next(m for m in messages if m.id == message_id)
    assert isinstance(found, AIMessage)
    return found


def handle_in(message: AIMessage) -> str:
    """The first handle a cut argument of ``message`` names."""
    texts = [v for call in message.tool_calls for v in call["args"].values() if isinstance(v, str)]
    found = HANDLE.search("\n".join(texts))
    assert found is not None, message
    return found.group(1)


def read_back(messages: list[BaseMessage]) -> AIMessage:
    """A scripted reply that asks read_original for the handle named in the cut turn."""
    return turn(
        ("read_original", {"handle": handle_in(by_id(messages, "ai-1"))}, "r1"), ai_id="ai-2"
    )


def run(
    responses: Sequence[Any], *, thread: str = "t1", **kwargs: Any
) -> tuple[dict[str, Any], Any, ToolInputShorteningMiddleware]:
    middleware = kwargs.pop("middleware", None) or [small()]
    kwargs.setdefault("system_prompt", LONG_SYSTEM)  # the tool is in the request from the start
    agent, model = scripted_agent(responses, tools=[run_python], middleware=middleware, **kwargs)
    state = agent.invoke({"messages": [HumanMessage("check separability")]}, cfg(thread))
    return state, model, middleware[0]


# -- in a real agent -------------------------------------------------------------------------


def test_the_model_first_sees_the_turn_with_its_long_input_cut() -> None:
    responses = [
        turn(("run_python", {"code": SCRIPT}, "c1")),
        AIMessage("looks fine", id="ai-2"),
        AIMessage("done", id="ai-3"),
    ]
    middleware = small()
    agent, model = scripted_agent(
        responses, tools=[run_python], middleware=[middleware], system_prompt=LONG_SYSTEM
    )
    state = agent.invoke({"messages": [HumanMessage("check")]}, cfg())
    assert all(m.id != "ai-1" for m in model.calls[0].messages)
    sent = by_id(model.calls[1].messages, "ai-1")
    code = sent.tool_calls[0]["args"]["code"]
    lines = SCRIPT.split("\n")
    assert code.split("\n")[:4] == lines[:4] and code.split("\n")[-2:] == lines[-2:]
    assert len(code.split("\n")) == 7
    assert f'read_original("{argument_handle("c1", "code", SCRIPT)}")' in code
    assert by_id(state["messages"], "ai-1") == sent  # state holds what was sent
    agent.invoke({"messages": [HumanMessage("again")]}, cfg())
    assert by_id(model.calls[2].messages, "ai-1") == sent  # later calls repeat the same bytes
    assert middleware.stats.calls_shortened == 1
    assert middleware.stats.tokens_after < middleware.stats.tokens_before


def test_a_first_cut_late_in_a_warm_run_never_adds_the_tool_mid_run() -> None:
    """The gate dates every call of the thread, not only the calls that cut: a first long input
    at the fourth call of a run whose calls come seconds apart finds the cache warm, so the
    tool list stays as it was (it used to take the missing date for a cold cache and add
    ``read_original``, re-writing the cache: ``shorten-inputs`` billed 1.114 of none on Claude
    Code sessions). With no tool to name, the input is left as it is."""
    responses = [
        turn(("run_python", {"code": SHORT}, "c1"), ai_id="ai-1"),
        turn(("run_python", {"code": SHORT}, "c2"), ai_id="ai-2"),
        turn(("run_python", {"code": SCRIPT}, "c3"), ai_id="ai-3"),
        AIMessage("looks fine", id="ai-4"),
    ]
    middleware = small(min_remaining_calls=0)
    _, model, _ = run(responses, middleware=[middleware], system_prompt="Be brief.")
    assert middleware.stats.calls_shortened == 0  # no way back in the request: not cut
    assert by_id(model.calls[3].messages, "ai-3").tool_calls[0]["args"]["code"] == SCRIPT
    tools = [[t["function"]["name"] for t in call.tools] for call in model.calls]
    assert all(names == tools[0] for names in tools)
    assert "read_original" not in tools[0]
    assert_prefix_kept(model)


def test_every_other_field_is_kept() -> None:
    original = turn(
        ("run_python", {"code": SCRIPT, "timeout": 30}, "c1"),
        ("run_python", {"code": SHORT}, "c2"),
        content="running both",
        usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
        response_metadata={"model_name": "m-1", "finish_reason": "tool_calls"},
        additional_kwargs={"reasoning": "think"},
        name="agent",
    )
    state, _, _ = run([original, AIMessage("done", id="ai-2")])
    cut = by_id(state["messages"], "ai-1")
    assert (cut.id, cut.name, cut.content) == ("ai-1", "agent", "running both")
    assert cut.usage_metadata == original.usage_metadata
    assert cut.additional_kwargs == {"reasoning": "think"}
    mark = _pop_mark(cut)
    assert cut.response_metadata == original.response_metadata
    assert mark["handles"] == [argument_handle("c1", "code", SCRIPT)]
    assert mark["tokens_after"] < mark["tokens_before"]
    assert [(c["id"], c["name"]) for c in cut.tool_calls] == [
        ("c1", "run_python"),
        ("c2", "run_python"),
    ]
    assert cut.tool_calls[0]["args"]["timeout"] == 30
    assert cut.tool_calls[1] == original.tool_calls[1]  # short call untouched
    assert original.tool_calls[0]["args"]["code"] == SCRIPT  # the scripted reply not mutated


def test_the_cut_turn_survives_a_sqlite_checkpointer() -> None:
    saver = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
    responses = [turn(("run_python", {"code": SCRIPT}, "c1")), AIMessage("ok", id="ai-2")]
    agent, model = scripted_agent(
        responses,
        tools=[run_python],
        middleware=[small()],
        checkpointer=saver,
        system_prompt=LONG_SYSTEM,
    )
    agent.invoke({"messages": [HumanMessage("check")]}, cfg())
    loaded = by_id(agent.get_state(cfg()).values["messages"], "ai-1")
    assert loaded.tool_calls == by_id(model.calls[1].messages, "ai-1").tool_calls
    assert _mark(loaded) is not None


def test_the_original_is_kept_per_thread_and_read_original_returns_it() -> None:
    middleware = small()
    responses = [
        turn(("run_python", {"code": SCRIPT}, "c1")),
        read_back,
        AIMessage("ok", id="ai-3"),
    ]
    state, _, _ = run(responses, middleware=[middleware])
    handle = argument_handle("c1", "code", SCRIPT)
    kept = middleware.store.get("t1", handle)
    assert kept == Original(handle, SCRIPT, "run_python", "c1")
    answer = next(
        m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "r1"
    )
    assert answer.content == excerpt(SCRIPT)
    assert middleware.store.get("t2", handle) is None


def test_the_output_shorteners_read_original_serves_inputs_on_a_shared_store() -> None:
    store = InMemoryOriginalStore()
    middleware = [
        small(store=store, retrieval_tool=False),
        ToolOutputShorteningMiddleware(store=store),
    ]
    responses = [
        turn(("run_python", {"code": SCRIPT}, "c1")),
        read_back,
        AIMessage("ok", id="ai-3"),
    ]
    agent, model = scripted_agent(
        responses, tools=[run_python], middleware=middleware, system_prompt=LONG_SYSTEM
    )
    state = agent.invoke({"messages": [HumanMessage("check")]}, cfg())
    offered = [[t["function"]["name"] for t in c.tools] for c in model.calls]
    # a long system prompt: the schema is negligible, so offered from the first call
    assert [names.count("read_original") for names in offered] == [1, 1, 1]
    answer = state["messages"][-2]
    assert isinstance(answer, ToolMessage) and answer.content == excerpt(SCRIPT)


def test_another_thread_cannot_read_the_original() -> None:
    middleware = small()
    agent, _ = scripted_agent(
        [turn(("run_python", {"code": SCRIPT}, "c1")), AIMessage("ok", id="ai-2")],
        tools=[run_python],
        middleware=[middleware],
    )
    agent.invoke({"messages": [HumanMessage("check")]}, cfg("t1"))
    handle = argument_handle("c1", "code", SCRIPT)
    other, _ = scripted_agent(
        [turn(("read_original", {"handle": handle}, "r1"), ai_id="x-1"), AIMessage("?", id="x-2")],
        middleware=[middleware],
    )
    state = other.invoke({"messages": [HumanMessage("peek")]}, cfg("t2"))
    answer = state["messages"][-2]
    assert isinstance(answer, ToolMessage) and answer.tool_call_id == "r1"
    assert "No original" in str(answer.content) and SCRIPT.split("\n")[10] not in str(
        answer.content
    )


def test_the_marker_names_read_original_only_when_the_request_holds_it() -> None:
    """Not adding the tool itself, the middleware cuts an input only in a thread whose
    requests hold a ``read_original`` reading its store (the agent's own copy of it)."""
    store = InMemoryOriginalStore()
    responses = [turn(("run_python", {"code": SCRIPT}, "c1")), AIMessage("ok", id="ai-2")]
    codes = []
    for tools in ([run_python, retrieval_tool(store)], [run_python]):
        agent, _ = scripted_agent(
            responses,
            tools=tools,
            middleware=[small(store=store, retrieval_tool=False)],
            system_prompt=LONG_SYSTEM,
        )
        state = agent.invoke({"messages": [HumanMessage("check separability")]}, cfg())
        codes.append(by_id(state["messages"], "ai-1").tool_calls[0]["args"]["code"])
    assert 'read_original("i' in codes[0]
    assert codes[1] == SCRIPT  # no tool to name: left as it is


def test_tools_listed_in_never_keep_their_inputs() -> None:
    middleware = small(never=frozenset({"run_python"}), store=InMemoryOriginalStore())
    state, model, _ = run(
        [turn(("run_python", {"code": SCRIPT}, "c1")), AIMessage("ok", id="ai-2")],
        middleware=[middleware],
    )
    assert by_id(model.calls[1].messages, "ai-1").tool_calls[0]["args"]["code"] == SCRIPT
    assert _mark(by_id(state["messages"], "ai-1")) is None
    assert len(middleware.store) == 0  # type: ignore[arg-type]  # nothing was kept


def test_a_call_whose_result_has_not_arrived_is_not_cut() -> None:
    history = [
        HumanMessage("check", id="h1"),
        turn(
            ("run_python", {"code": SCRIPT}, "c1"), ("run_python", {"code": SCRIPT + "\n#2"}, "c2")
        ),
        ToolMessage("exit 0", tool_call_id="c1", id="t1"),
        HumanMessage("go on", id="h2"),
    ]
    agent, model = scripted_agent(
        [AIMessage("ok", id="ai-2")], middleware=[small(offer_tool="always")]
    )
    agent.invoke({"messages": history}, cfg())
    sent = by_id(model.calls[0].messages, "ai-1")
    assert sent.tool_calls[0]["args"]["code"] != SCRIPT  # answered: cut
    assert sent.tool_calls[1]["args"]["code"] == SCRIPT + "\n#2"  # no result yet: kept
    assert _mark(sent)["handles"] == [argument_handle("c1", "code", SCRIPT)]


def test_a_turn_with_repeated_call_ids_is_left_alone() -> None:
    twice = turn(("run_python", {"code": SCRIPT}, "c1"), ("run_python", {"code": SHORT}, "c1"))
    history = [HumanMessage("check", id="h1"), twice, ToolMessage("ok", tool_call_id="c1", id="t1")]
    agent, model = scripted_agent(
        [AIMessage("ok", id="ai-2")], middleware=[small()], system_prompt=LONG_SYSTEM
    )
    agent.invoke({"messages": history}, cfg())
    assert by_id(model.calls[0].messages, "ai-1") == twice


def test_a_turn_already_marked_is_not_processed_again() -> None:
    marked = turn(
        ("run_python", {"code": SCRIPT}, "c1"),
        response_metadata={"tokenlean": {"input_shortening": {"handles": []}}},
    )
    history = [
        HumanMessage("check", id="h1"),
        marked,
        ToolMessage("exit 0", tool_call_id="c1", id="t1"),
    ]
    middleware = small()
    agent, model = scripted_agent(
        [AIMessage("ok", id="ai-2")], middleware=[middleware], system_prompt=LONG_SYSTEM
    )
    agent.invoke({"messages": history}, cfg())
    assert by_id(model.calls[0].messages, "ai-1") == marked
    assert middleware.stats.calls_shortened == 0


def test_anthropic_tool_use_blocks_follow_the_cut() -> None:
    content: list[dict[str, Any]] = [
        {"type": "text", "text": "running both"},
        {"type": "tool_use", "id": "c1", "name": "run_python", "input": {"code": SCRIPT}},
        {"type": "tool_use", "id": "c2", "name": "run_python", "input": {"code": SHORT}},
    ]
    original = turn(
        ("run_python", {"code": SCRIPT}, "c1"),
        ("run_python", {"code": SHORT}, "c2"),
        content=content,
    )
    _, model, _ = run([original, AIMessage("ok", id="ai-2")])
    sent = by_id(model.calls[1].messages, "ai-1")
    assert isinstance(sent.content, list)
    text, first, second = sent.content
    assert text == content[0] and second == content[2]
    assert isinstance(first, dict) and first["input"] == sent.tool_calls[0]["args"]
    assert first["input"]["code"] != SCRIPT and HANDLE.search(first["input"]["code"])
    assert content[1]["input"] == {"code": SCRIPT}  # not mutated


def test_v1_tool_call_blocks_follow_the_cut() -> None:
    content = [{"type": "tool_call", "id": "c1", "name": "run_python", "args": {"code": SCRIPT}}]
    original = turn(("run_python", {"code": SCRIPT}, "c1"), content=content)
    _, model, _ = run([original, AIMessage("ok", id="ai-2")])
    sent = by_id(model.calls[1].messages, "ai-1")
    assert isinstance(sent.content, list) and isinstance(sent.content[0], dict)
    assert sent.content[0]["args"] == sent.tool_calls[0]["args"] != {"code": SCRIPT}


def test_openai_raw_tool_calls_follow_the_cut() -> None:
    compact = '{"code":"print(1)"}'  # bytes of an uncut call must not be re-serialised
    raw: list[dict[str, Any]] = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "run_python", "arguments": json.dumps({"code": SCRIPT})},
        },
        {"id": "c2", "type": "function", "function": {"name": "run_python", "arguments": compact}},
    ]
    original = turn(
        ("run_python", {"code": SCRIPT}, "c1"),
        ("run_python", {"code": SHORT}, "c2"),
        additional_kwargs={"tool_calls": raw, "refusal": None},
    )
    _, model, _ = run([original, AIMessage("ok", id="ai-2")])
    sent = by_id(model.calls[1].messages, "ai-1")
    first, second = sent.additional_kwargs["tool_calls"]
    assert json.loads(first["function"]["arguments"]) == sent.tool_calls[0]["args"]
    assert sent.tool_calls[0]["args"]["code"] != SCRIPT
    assert first["id"] == "c1" and first["function"]["name"] == "run_python"
    assert second == raw[1] and second["function"]["arguments"] == compact
    assert sent.additional_kwargs["refusal"] is None
    assert json.loads(raw[0]["function"]["arguments"]) == {"code": SCRIPT}  # not mutated


def test_without_a_thread_id_nothing_is_cut() -> None:
    from langchain.agents import create_agent

    from tokenlean.testing import ScriptedChatModel

    middleware = small()
    model = ScriptedChatModel(
        responses=[turn(("run_python", {"code": SCRIPT}, "c1")), AIMessage("ok", id="ai-2")]
    )
    agent: Any = create_agent(model, tools=[run_python], middleware=[middleware])
    agent.invoke({"messages": [HumanMessage("check")]})
    assert by_id(model.calls[1].messages, "ai-1").tool_calls[0]["args"]["code"] == SCRIPT
    assert middleware.stats.calls_shortened == 0


async def test_ainvoke_cuts_and_keeps_the_original() -> None:
    middleware = small()
    responses = [
        turn(("run_python", {"code": SCRIPT}, "c1")),
        read_back,
        AIMessage("ok", id="ai-3"),
    ]
    agent, model = scripted_agent(
        responses, tools=[run_python], middleware=[middleware], system_prompt=LONG_SYSTEM
    )
    state = await agent.ainvoke({"messages": [HumanMessage("check")]}, cfg("a1"))
    sent = by_id(model.calls[1].messages, "ai-1")
    assert sent.tool_calls[0]["args"]["code"] != SCRIPT and _mark(sent) is not None
    handle = argument_handle("c1", "code", SCRIPT)
    assert (await middleware.store.aget("a1", handle)) == Original(
        handle, SCRIPT, "run_python", "c1"
    )
    assert state["messages"][-2].content == excerpt(SCRIPT)


class BrokenStore(InMemoryOriginalStore):
    """A store whose writes fail (a full disk, a lost connection)."""

    def put(self, scope: str, original: Original) -> None:
        raise OSError("store is down")

    async def aput(self, scope: str, original: Original) -> None:
        raise OSError("store is down")


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_broken_store_leaves_the_turn_unchanged_and_the_agent_runs_on(
    asynchronous: bool, caplog: pytest.LogCaptureFixture
) -> None:
    middleware = small(store=BrokenStore())
    responses = [turn(("run_python", {"code": SCRIPT}, "c1")), AIMessage("done", id="ai-2")]
    agent, model = scripted_agent(
        responses, tools=[run_python], middleware=[middleware], system_prompt=LONG_SYSTEM
    )
    inputs = {"messages": [HumanMessage("check")]}
    with caplog.at_level(logging.ERROR, logger="tokenlean.langchain.input_shortening"):
        state = await agent.ainvoke(inputs, cfg()) if asynchronous else agent.invoke(inputs, cfg())
    assert state["messages"][-1].content == "done"
    sent = by_id(model.calls[1].messages, "ai-1")
    assert sent.tool_calls[0]["args"]["code"] == SCRIPT and _mark(sent) is None
    assert "could not keep original tool inputs" in caplog.text
    assert middleware.stats.calls_shortened == 0  # nothing was cut, nothing is counted


def test_bad_config_raises_value_error() -> None:
    with pytest.raises(ValueError, match="never"):
        ToolInputShorteningMiddleware(settings=InputShorteningSettings(never="run_python"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool_name"):
        ToolInputShorteningMiddleware(tool_name="read original")
    with pytest.raises(ValueError, match="head_lines"):
        ToolInputShorteningMiddleware(settings=InputShorteningSettings(head_lines=-1))
    with pytest.raises(ValueError, match="settings"):
        ToolInputShorteningMiddleware(settings={"min_tokens": 50})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="offer_tool"):
        ToolInputShorteningMiddleware(offer_tool="sometimes")  # type: ignore[arg-type]


ECHOED = [  # a file the agent writes with a heredoc, then prints: its lines come back
    f"def check_{i}(model):\n    return separability_matrix(model)[{i}] == {i % 3}"
    for i in range(60)
]
HEREDOC = "cat > check.py <<'EOF'\n" + "\n".join(ECHOED) + "\nEOF\ncat check.py"


@tool
def bash(command: str) -> str:
    """Run a shell command."""
    return "\n".join(ECHOED)


def second_call(middleware: list[Any]) -> list[BaseMessage]:
    """What the model is sent after the agent wrote and printed ``ECHOED``."""
    responses = [turn(("bash", {"command": HEREDOC}, "c1")), AIMessage("ok", id="ai-2")]
    agent, model = scripted_agent(
        responses, tools=[bash], middleware=middleware, system_prompt=LONG_SYSTEM
    )
    agent.invoke({"messages": [HumanMessage("write it")]}, cfg())
    return list(model.calls[1].messages)


def test_listed_before_the_output_shortener_no_result_points_at_cut_lines() -> None:
    """The output shortener treats tool-call inputs as already shown: it must see them cut."""
    store = InMemoryOriginalStore()
    sent = second_call(
        [
            small(store=store, retrieval_tool=False, offer_tool="always"),
            ToolOutputShorteningMiddleware(store=store, offer_tool="always"),
        ]
    )
    result = next(m for m in sent if isinstance(m, ToolMessage))
    assert "already shown" not in str(result.content)
    assert "return separability_matrix(model)[30] == 0" in str(result.content)


def test_one_shortener_given_inputs_plans_them_first_whatever_the_stack_order() -> None:
    """plan_turn, not the stack, orders the stages: one middleware given ``inputs`` cuts the
    turn's inputs and then shortens its results against them as cut; two middleware listed
    outputs-first point the result at lines the model will no longer see."""
    settings = InputShorteningSettings(min_tokens=50, head_lines=4, tail_lines=2)
    one = second_call([ToolOutputShorteningMiddleware(inputs=settings, offer_tool="always")])
    result = next(m for m in one if isinstance(m, ToolMessage))
    assert "already shown" not in str(result.content)
    assert "return separability_matrix(model)[30] == 0" in str(result.content)
    sent = by_id(one, "ai-1").tool_calls[0]["args"]["command"]
    assert len(sent) < len(HEREDOC) and handle_in(by_id(one, "ai-1"))  # the input was cut
    store = InMemoryOriginalStore()
    wrong = second_call(
        [
            ToolOutputShorteningMiddleware(store=store, offer_tool="always"),
            small(store=store, retrieval_tool=False, offer_tool="always"),
        ]
    )
    assert "already shown" in str(next(m for m in wrong if isinstance(m, ToolMessage)).content)


def test_one_shortener_given_inputs_serves_the_input_original() -> None:
    middleware = ToolOutputShorteningMiddleware(
        inputs=InputShorteningSettings(min_tokens=50, head_lines=4, tail_lines=2)
    )
    responses = [turn(("run_python", {"code": SCRIPT}, "c1")), read_back, AIMessage("done")]
    state, model, used = run(responses, middleware=[middleware], system_prompt=LONG_SYSTEM)
    handle = argument_handle("c1", "code", SCRIPT)
    assert middleware.store.get("t1", handle) == Original(handle, SCRIPT, "run_python", "c1")
    read = next(
        m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "r1"
    )
    assert read.content == excerpt(SCRIPT)
    assert used.input_stats.calls_shortened == 1 and used.stats.results_shortened == 0
    assert "read_original" in {t["function"]["name"] for t in model.calls[0].tools}


# -- cache safety on a real trajectory -------------------------------------------------------

TRAJECTORY = TRAJECTORIES / "miniswe_deepseek" / "chat_test__astropy__astropy-12907.json"


@pytest.mark.skipif(
    not TRAJECTORY.exists(),
    reason="needs tokenlean's shared data folder (../shared/data/trajectories)",
)
def test_replay_cuts_inputs_without_breaking_the_prompt_cache() -> None:
    trajectory = load_trajectory(TRAJECTORY)
    measurer = PromptMeasurer(EstimateCounter())
    plain = measure_replay(trajectory, replay(trajectory, []), measurer, strategy="none")
    # with the output shortener, as recommended, read_original listed from the first call
    stack = [
        ToolInputShorteningMiddleware(offer_tool="always"),
        ToolOutputShorteningMiddleware(offer_tool="always"),
    ]
    result = replay(trajectory, stack)
    metrics = measure_replay(trajectory, result, measurer, strategy="inputs")
    assert metrics.prefix_breaks == 0  # nothing already sent changes
    assert metrics.tokens_sent < plain.tokens_sent
    marked = [m for m in result.final_messages if isinstance(m, AIMessage) and _mark(m) is not None]
    assert marked, "no tool input was cut"
    for message in marked:  # each cut turn went out cut from its first call on
        assert handle_in(message) in _mark(message)["handles"]
        firsts = [c for c in result.calls if any(m.id == message.id for m in c.messages)]
        first = next(m for m in firsts[0].messages if m.id == message.id)
        assert isinstance(first, AIMessage) and first.tool_calls == message.tool_calls
