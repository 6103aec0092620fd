"""LoopGuardMiddleware in a real create_agent with the scripted model."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from tests.data import TRAJECTORIES, needs_shared, real_trajectory
from tokenlean.langchain import LoopGuardMiddleware
from tokenlean.langchain.loop_guard import ID_PREFIX, STATE_KEY
from tokenlean.loop_guard._detect import LoopDetector
from tokenlean.loop_guard._step import Step
from tokenlean.testing import scripted_agent
from tokenlean.transcript import canonical

OUTPUTS: dict[str, str] = {}


@tool
def sh(command: str) -> str:
    """Run a shell command."""
    return OUTPUTS.get(command, f"ran {command}")


def call(command: str, i: int, text: str = "") -> AIMessage:
    return AIMessage(
        content=text,
        id=f"ai-{i}",
        tool_calls=[{"id": f"call-{i}", "name": "sh", "args": {"command": command}}],
    )


def looping(n: int, command: str = "cat missing.txt", first: int = 0) -> list[AIMessage]:
    return [call(command, i) for i in range(first, first + n)]


def invoke(
    responses: Sequence[Any], middleware: LoopGuardMiddleware, thread: str = "t", **kw: Any
) -> tuple[dict[str, Any], Any, Any]:
    agent, model = scripted_agent(responses, tools=[sh], middleware=[middleware], **kw)
    config = {"configurable": {"thread_id": thread}}
    out = agent.invoke({"messages": [HumanMessage("fix it", id="task")]}, config)
    return out, model, agent


def guard_ids(messages: Sequence[BaseMessage]) -> list[str]:
    return [str(m.id) for m in messages if str(m.id or "").startswith(ID_PREFIX)]


# -- the graded response ---------------------------------------------------------------


def test_nudge_once_then_force_a_final_answer_then_end_the_run() -> None:
    guard = LoopGuardMiddleware()
    out, model, _ = invoke(looping(10), guard)

    choices = [c.tool_choice for c in model.calls]
    assert choices == [None, None, None, None, "none"]  # only the call after the final rung
    nudged = model.calls[3].messages
    assert isinstance(nudged[-1], HumanMessage) and "repeating yourself" in nudged[-1].text
    assert guard_ids(nudged) == [f"{ID_PREFIX}nudge-3"]  # appended once, never again
    assert guard_ids(model.calls[4].messages) == [f"{ID_PREFIX}nudge-3", f"{ID_PREFIX}final-4"]
    assert "Tools are disabled" in model.calls[4].messages[-1].text
    last = out["messages"][-1]
    assert isinstance(last, AIMessage) and last.id == f"{ID_PREFIX}end-5"
    assert "loop guard" in last.text and not last.tool_calls
    assert len(model.calls) == 5 and model.pending == 5  # the rest of the loop never ran

    stats = guard.stats
    assert (stats.nudges, stats.final_answers, stats.ends, stats.errors) == (1, 1, 1, 0)
    assert stats.by_pattern == {"repeat": 3}
    assert [(e.response, e.pattern, e.steps) for e in stats.events] == [
        ("nudge", "repeat", 3),
        ("final", "repeat", 4),
        ("end", "repeat", 5),
    ]


def test_a_model_that_obeys_answers_and_the_run_ends_normally() -> None:
    def answer_if_asked(messages: list[BaseMessage]) -> AIMessage:
        if str(messages[-1].id).startswith(f"{ID_PREFIX}final"):
            return AIMessage(content="Final answer: the file is missing.", id="answer")
        return call("cat missing.txt", len(messages))

    guard = LoopGuardMiddleware()
    out, model, _ = invoke([answer_if_asked] * 8, guard)
    assert out["messages"][-1].id == "answer"
    assert [c.tool_choice for c in model.calls][-1] == "none"
    assert (guard.stats.nudges, guard.stats.final_answers, guard.stats.ends) == (1, 1, 0)


def test_a_model_that_recovers_after_the_nudge_is_left_alone() -> None:
    def recover(messages: list[BaseMessage]) -> AIMessage:
        nudged = any(str(m.id).startswith(ID_PREFIX) for m in messages)
        command = f"ls {len(messages)}" if nudged else "cat missing.txt"
        return call(command, len(messages))

    guard = LoopGuardMiddleware()
    _, model, _ = invoke([recover] * 12, guard)
    assert len(model.calls) == 13  # 12 scripted turns and the final empty answer
    assert (guard.stats.nudges, guard.stats.final_answers, guard.stats.ends) == (1, 0, 0)
    assert all(c.tool_choice is None for c in model.calls)


def test_ignoring_the_forced_answer_with_a_new_tool_call_ends_the_run() -> None:
    responses = [*looping(4), call("ls", 4), call("pwd", 5), call("id", 6)]
    guard = LoopGuardMiddleware()
    out, _, _ = invoke(responses, guard)
    assert [e.pattern for e in guard.stats.events] == ["repeat", "repeat", "ignored-final"]
    assert out["messages"][-1].id == f"{ID_PREFIX}end-5"


def test_custom_ladder_and_texts() -> None:
    guard = LoopGuardMiddleware(
        responses=("nudge", "end"), nudge_text="Stop.", end_text=lambda d: f"bye {d.pattern}"
    )
    out, model, _ = invoke(looping(10), guard)
    assert model.calls[3].messages[-1].text == "Stop."
    assert out["messages"][-1].text == "bye repeat"
    assert all(c.tool_choice is None for c in model.calls)


def test_a_nudge_only_ladder_nudges_once_per_episode() -> None:
    guard = LoopGuardMiddleware(responses=("nudge",))
    out, model, _ = invoke(looping(10), guard)
    assert len(model.calls) == 11 and len(guard_ids(out["messages"])) == 1
    assert guard.stats.nudges == 1


def test_a_new_episode_after_recovery_starts_from_the_nudge_again() -> None:
    progress = [call(f"ls {i}", 10 + i) for i in range(3)]
    responses = [*looping(3), *progress, *looping(3, "pwd", first=20)]
    guard = LoopGuardMiddleware(recovery_steps=2)
    invoke(responses, guard)
    assert [e.response for e in guard.stats.events] == ["nudge", "nudge"]
    latched = LoopGuardMiddleware(recovery_steps=20)
    invoke(responses, latched)
    assert [e.response for e in latched.stats.events] == ["nudge", "final"]


def test_edit_then_rerun_with_changing_output_is_never_answered() -> None:
    responses = []
    for i in range(6):
        OUTPUTS[f"edit {i}"] = "File updated."
        OUTPUTS[f"pytest #{i}"] = f"<returncode>1</returncode> {5 - i} failed"
        responses += [call(f"edit {i}", 2 * i), call(f"pytest #{i}", 2 * i + 1)]
    guard = LoopGuardMiddleware()
    invoke(responses, guard)
    assert guard.stats.events == () and guard.stats.checks == 13


def _chat(prompts: Sequence[str], guard: LoopGuardMiddleware) -> None:
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "chat"}}
    replies: list[Any] = [call("ls", 0), AIMessage("Listed.", id="r0")]
    for i, prompt in enumerate(prompts, start=1):
        agent, _ = scripted_agent(
            [*replies, AIMessage(f"answer {i}", id=f"r{i}")],
            tools=[sh],
            middleware=[guard],
            checkpointer=saver,
        )
        replies = []
        agent.invoke({"messages": [HumanMessage(prompt, id=f"u{i}")]}, config)


def test_answering_different_questions_without_tools_is_not_talking_in_circles() -> None:
    guard = LoopGuardMiddleware()
    _chat(["hi", "what is 2+2?", "and 3+3?", "thanks", "bye"], guard)
    assert guard.stats.events == ()


def test_talking_without_acting_across_repeated_prompts_is_caught() -> None:
    guard = LoopGuardMiddleware()
    _chat(["fix the bug"] + ["Continue. Use a tool."] * 4, guard)
    assert [(e.response, e.pattern) for e in guard.stats.events][:1] == [("nudge", "talking")]


TAU2_RETAIL = "tau2_retail_gpt41/tau2_retail_gpt-4.1__task_32__trial0.json"


@needs_shared
def test_a_customer_service_agent_answering_its_user_is_left_alone() -> None:
    # A real tau2-bench run: the agent replies without tools to one new user message after
    # another (three in a row here), after having used tools: conversation, not a loop.
    from tokenlean.replay._engine import replay
    from tokenlean.replay._formats import load_trajectory

    trajectory = load_trajectory(TRAJECTORIES / TAU2_RETAIL)
    guard = LoopGuardMiddleware()
    replay(trajectory, [guard])
    calls = sum(m.role == "assistant" for m in trajectory.messages)
    assert guard.stats.checks == calls + 1 and guard.stats.events == ()


def test_exempt_tools_repeat_freely() -> None:
    guard = LoopGuardMiddleware(detector=LoopDetector(exempt_tools={"sh"}))
    _, model, _ = invoke(looping(6), guard)
    assert guard.stats.events == () and len(model.calls) == 7


@tool
def job_output(shell_id: str) -> str:
    """What a background shell printed so far."""
    return "<status>running</status>\n\n<stdout>\n</stdout>"


def test_polls_after_a_loop_do_not_climb_the_ladder() -> None:
    """Polls of a running process are left out of the patterns: they neither end the run nor
    take a loop answered before them up the ladder."""
    OUTPUTS["make &"] = "Command running in background with ID: b1"
    poll = [
        AIMessage(
            "",
            id=f"ai-p{i}",
            tool_calls=[{"id": f"p{i}", "name": "job_output", "args": {"shell_id": "b1"}}],
        )
        for i in range(6)
    ]
    guard = LoopGuardMiddleware()
    responses = [call("make &", 9), *looping(3), *poll, AIMessage("built", id="done")]
    agent, model = scripted_agent(responses, tools=[sh, job_output], middleware=[guard])
    config = {"configurable": {"thread_id": "polls"}}
    out = agent.invoke({"messages": [HumanMessage("build it", id="task")]}, config)
    assert [e.response for e in guard.stats.events] == ["nudge"]
    assert len(model.calls) == len(responses) and out["messages"][-1].content == "built"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"responses": ()},
        {"responses": ("nudge", "shout")},
        {"responses": ("end", "nudge")},
        {"recovery_steps": 0},
        {"max_events": -1},
        {"nudge_text": "  "},
        {"end_text": None},
    ],
)
def test_bad_config_is_a_clear_value_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        LoopGuardMiddleware(**kwargs)


# -- state, async, threads, failures ---------------------------------------------------


def test_the_episode_lives_in_checkpointed_state(tmp_path: Any) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "state.db")) as saver:
        config = {"configurable": {"thread_id": "persisted"}}
        agent, _ = scripted_agent(
            looping(3), tools=[sh], middleware=[LoopGuardMiddleware()], checkpointer=saver
        )
        agent.invoke({"messages": [HumanMessage("fix it", id="task")]}, config)
        stored = agent.get_state(config).values[STATE_KEY]
        assert stored == {"level": 1, "seen_at": 3, "final_at": -1}  # nudged once

        # A fresh process (new middleware, new graph, same checkpoint) continues the ladder:
        # the loop that follows gets the next rung, not a second nudge.
        fresh = LoopGuardMiddleware()
        again, model = scripted_agent(
            looping(3, first=10), tools=[sh], middleware=[fresh], checkpointer=saver
        )
        again.invoke({"messages": [HumanMessage("go on", id="more")]}, config)
        assert [e.response for e in fresh.stats.events] == ["final"]
        assert model.calls[-1].tool_choice == "none"


def test_an_answer_to_the_forced_call_closes_the_final_rung() -> None:
    guard, saver = LoopGuardMiddleware(), InMemorySaver()
    config = {"configurable": {"thread_id": "answered"}}
    agent, _ = scripted_agent(looping(4), tools=[sh], middleware=[guard], checkpointer=saver)
    agent.invoke({"messages": [HumanMessage("fix it")]}, config)  # ends with an empty answer
    assert [e.response for e in guard.stats.events] == ["nudge", "final"]
    # The user asks for more; a new tool call is not "ignoring the final answer".
    agent, model = scripted_agent(
        [call("ls", 20), AIMessage("a.py", id="listed")],
        tools=[sh],
        middleware=[guard],
        checkpointer=saver,
    )
    out = agent.invoke({"messages": [HumanMessage("and now list")]}, config)
    assert [e.response for e in guard.stats.events] == ["nudge", "final"]
    assert len(model.calls) == 2 and out["messages"][-1].id == "listed"


async def test_async_invoke_takes_the_same_path() -> None:
    guard = LoopGuardMiddleware()
    agent, model = scripted_agent(looping(10), tools=[sh], middleware=[guard])
    config = {"configurable": {"thread_id": "async"}}
    out = await agent.ainvoke({"messages": [HumanMessage("fix it")]}, config)
    assert [c.tool_choice for c in model.calls] == [None, None, None, None, "none"]
    assert out["messages"][-1].id == f"{ID_PREFIX}end-5"


def test_one_instance_serves_many_threads_at_once() -> None:
    guard = LoopGuardMiddleware()
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            invoke(looping(10), guard, thread=f"t{i}")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    stats = guard.stats
    assert (stats.nudges, stats.final_answers, stats.ends) == (8, 8, 8)
    assert stats.by_pattern == {"repeat": 24} and len(stats.events) == 24


def test_a_failing_detector_is_logged_and_the_agent_runs_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(step: Step) -> bool:
        raise RuntimeError("boom")

    guard = LoopGuardMiddleware(detector=LoopDetector(exempt_if=broken))
    with caplog.at_level(logging.ERROR):
        _, model, _ = invoke(looping(5), guard)
    assert len(model.calls) == 6  # every scripted turn ran, and the final answer
    assert guard.stats.errors == 5  # every check with steps to look at (not the first call)
    assert "LoopGuardMiddleware failed" in caplog.text


def test_odd_messages_pass_through() -> None:
    image = HumanMessage(content=[{"type": "image_url", "image_url": {"url": "data:x"}}])
    orphan = ToolMessage(content="late result", tool_call_id="nobody", id="orphan")
    bad = AIMessage(content="\ud800 half a surrogate", id="bad")
    agent, model = scripted_agent(looping(2), tools=[sh], middleware=[LoopGuardMiddleware()])
    config = {"configurable": {"thread_id": "odd"}}
    agent.invoke({"messages": [image, orphan, bad, HumanMessage("go")]}, config)
    assert len(model.calls) == 3 and all(c.tool_choice is None for c in model.calls)


# -- cache safety ----------------------------------------------------------------------


def _prefix_kept(before: Sequence[BaseMessage], after: Sequence[BaseMessage]) -> bool:
    old = [canonical(m) for m in _view(before)]
    return old == [canonical(m) for m in _view(after)][: len(old)]


def _view(messages: Sequence[BaseMessage]) -> list[Any]:
    from tokenlean.langchain._adapter import to_view

    return to_view(messages)


def test_every_call_extends_the_previous_prompt() -> None:
    _, model, _ = invoke(looping(10), LoopGuardMiddleware())
    pairs = zip(model.calls, model.calls[1:], strict=False)
    assert all(_prefix_kept(a.messages, b.messages) for a, b in pairs)


def _looping_variant(path: str, copies: int) -> Any:
    """A real run cut after its middle tool turn, then that turn repeated ``copies`` times."""
    from dataclasses import replace

    from tokenlean.replay._formats import load_trajectory

    trajectory = load_trajectory(real_trajectory(path))
    messages = list(trajectory.messages)
    turns = [i for i, m in enumerate(messages) if m.role == "assistant" and m.tool_calls]
    start = turns[len(turns) // 2]
    turn, result = messages[start], messages[start + 1]
    assert result.tool_call_id == turn.tool_calls[0].id
    out = messages[: start + 2]
    for j in range(copies):
        tag = f"copy{j}"
        calls = tuple(replace(c, id=f"{c.id}-{tag}") for c in turn.tool_calls)
        out.append(replace(turn, id=f"ai{start}-{tag}", tool_calls=calls))
        out.append(replace(result, id=f"tool{start}-{tag}", tool_call_id=calls[0].id))
    return replace(trajectory, messages=tuple(out))


PATH = "miniswe_deepseek/chat_test__django__django-11001.json"


@pytest.fixture(scope="module")
def measurer() -> Any:
    from tokenlean.replay._metrics import PromptMeasurer
    from tokenlean.tokens import EstimateCounter

    return PromptMeasurer(EstimateCounter())


@needs_shared
def test_replay_of_a_looping_run_breaks_no_prefix(measurer: Any) -> None:
    from tokenlean.replay._engine import measure_replay, replay

    trajectory = _looping_variant(PATH, copies=6)
    guard = LoopGuardMiddleware()
    result = replay(trajectory, [guard])
    guarded = measure_replay(trajectory, result, measurer, strategy="loop-guard")
    baseline = measure_replay(trajectory, replay(trajectory, []), measurer, strategy="none")

    assert [e.response for e in guard.stats.events] == ["nudge", "final", "end"]
    assert guarded.prefix_breaks == 0 and guarded.break_positions == []  # appended, not rewritten
    forced = [i for i, c in enumerate(result.calls) if c.tool_choice == "none"]
    assert len(forced) == 1  # the one call whose request (not its bytes) differs
    # Nudge after 2 copies, answer request after 3, end before the 5th: 2 of 6 copies saved.
    assert guarded.calls == baseline.calls - 2 and guarded.tokens_sent < baseline.tokens_sent


@needs_shared
def test_replay_of_a_healthy_run_sends_identical_bytes(measurer: Any) -> None:
    from tokenlean.replay._engine import measure_replay, replay
    from tokenlean.replay._formats import load_trajectory

    trajectory = load_trajectory(real_trajectory(PATH))
    guard = LoopGuardMiddleware()
    guarded = measure_replay(trajectory, replay(trajectory, [guard]), measurer, strategy="g")
    baseline = measure_replay(trajectory, replay(trajectory, []), measurer, strategy="none")
    assert guard.stats.events == () and guard.stats.checks == baseline.calls + 1
    assert (guarded.tokens_sent, guarded.prefix_breaks) == (baseline.tokens_sent, 0)


def test_the_strategy_is_registered() -> None:
    from tokenlean.replay import _strategies as strategies

    strategies.load_plugins()
    built = strategies.get("loop-guard").factory()
    assert [type(m) for m in built] == [LoopGuardMiddleware]
    assert built[0] is not strategies.get("loop-guard").factory()[0]  # fresh every time


# -- invariants ------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["ls", "cat a", "pytest", "PARALLEL"]), max_size=12))
def test_any_run_keeps_pairing_prefixes_and_the_ladder(commands: list[str]) -> None:
    responses: list[AIMessage] = []
    for i, command in enumerate(commands):
        if command == "PARALLEL":
            calls = [{"id": f"p{i}-{j}", "name": "sh", "args": {"command": "ls"}} for j in (0, 1)]
            responses.append(AIMessage(content="", id=f"ai-{i}", tool_calls=calls))
        else:
            responses.append(call(command, i))
    guard = LoopGuardMiddleware()
    out, model, _ = invoke(responses, guard, thread="prop")

    answered = {m.tool_call_id for m in out["messages"] if isinstance(m, ToolMessage)}
    asked = {c["id"] for m in out["messages"] if isinstance(m, AIMessage) for c in m.tool_calls}
    assert asked == answered  # every tool call still has its result
    rungs = [e.response for e in guard.stats.events]
    assert rungs == ["nudge", "final", "end"][: len(rungs)]
    pairs = zip(model.calls, model.calls[1:], strict=False)
    assert all(_prefix_kept(a.messages, b.messages) for a, b in pairs)
    forced = [i for i, c in enumerate(model.calls) if c.tool_choice == "none"]
    assert len(forced) == rungs.count("final")
    assert all(str(model.calls[i].messages[-1].id).startswith(f"{ID_PREFIX}final") for i in forced)
