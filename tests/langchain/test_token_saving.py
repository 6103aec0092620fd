"""TokenSavingMiddleware compression inside a real create_agent driven by a scripted model."""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents.middleware import AgentMiddleware, ModelRequest, wrap_model_call
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.sqlite import SqliteSaver

from tokenlean import TokenSavingStats, compress_tool_output
from tokenlean.langchain import TokenSavingMiddleware, build_steps_from_messages
from tokenlean.langchain.token_saving import COMPRESSED_KEY
from tokenlean.testing import scripted_agent
from tokenlean.token_saving._words import make_heuristic_classifier

#: The reference's constructor, parameter by parameter (name -> default).
SPEC_DEFAULTS: dict[str, Any] = {
    "compress_threshold_chars": 1800,
    "head_keep_chars": 900,
    "tail_keep_chars": 700,
    "keep_recent_tool_messages": 2,
    "early_exit_min_call_index": 40,
    "signals_fn": None,
    "enable_compression": True,
    "enable_early_exit": True,
    "enable_perplexity_compression": False,
    "perplexity_classifier": None,
    "perplexity_recent_cutoff": 3,
    "perplexity_mid_cutoff": 10,
    "perplexity_keep_ratio_mid": 0.55,
    "perplexity_keep_ratio_old": 0.30,
    "perplexity_window_words": 50,
    "perplexity_min_content_words": 30,
}

PROSE = (
    "Looking at the output above, it seems that the failure is most likely caused by the way "
    "the parser handles the header, so I will now open the module and read the function again "
    "before I change anything, because the previous attempt did not really work as expected. "
)


def output(i: int, size: int = 5000) -> str:
    """A distinct long tool output with references the agent could quote."""
    lines = [f"src/pkg/mod_{i}.py:{n}: value_{i}_{n} = compute({n})" for n in range(size // 40)]
    return "\n".join(lines)[:size]


OUTPUTS: dict[str, str] = {f"cmd{i}": output(i) for i in range(8)}


@tool
def run(cmd: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Run a shell command."""
    return ToolMessage(
        content=OUTPUTS.get(cmd, "ok"),
        tool_call_id=tool_call_id,
        name="run",
        status="error" if cmd == "cmd0" else "success",
        artifact={"cmd": cmd, "exit": 1},
        additional_kwargs={"shell": "bash"},
        response_metadata={"elapsed_ms": 12},
    )


def step(i: int, cmd: str | None = None, thought: str = "") -> AIMessage:
    return AIMessage(
        content=thought or f"Step {i}: run {cmd}",
        id=f"ai-{i}",
        tool_calls=[{"id": f"call-{i}", "name": "run", "args": {"cmd": cmd or f"cmd{i}"}}],
        usage_metadata={"input_tokens": 100, "output_tokens": 10, "total_tokens": 110},
        response_metadata={"model_name": "scripted", "finish_reason": "tool_calls"},
    )


def episode(n: int, thought: str = "") -> list[AIMessage]:
    return [step(i, thought=thought) for i in range(n)] + [AIMessage("done", id="ai-final")]


def tool_contents(messages: Sequence[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, ToolMessage)]


def run_agent(middleware: TokenSavingMiddleware, responses: list[AIMessage]) -> tuple[Any, Any]:
    agent, model = scripted_agent(responses, tools=[run], middleware=[middleware])
    config = {"configurable": {"thread_id": "t"}}
    result = agent.invoke({"messages": [HumanMessage("fix the bug", id="h0")]}, config)
    return result, model


# -- the spec's surface ------------------------------------------------------------------------


def test_constructor_has_every_spec_parameter_with_its_default() -> None:
    params = inspect.signature(TokenSavingMiddleware).parameters
    for name, default in SPEC_DEFAULTS.items():
        assert params[name].default == default, name
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["early_exit_text"].default.startswith("You appear to be stuck in a loop")
    assert params["compress_once"].default is True  # the reference's rewrites: opt in
    assert isinstance(TokenSavingMiddleware(compress_once=False).stats, TokenSavingStats)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("compress_threshold_chars", -5),
        ("keep_recent_tool_messages", "2"),
        ("perplexity_keep_ratio_mid", 0.0),
        ("perplexity_window_words", 0),
        ("early_exit_min_call_index", -1),
        ("early_exit_text", "  "),
        ("signals_fn", 42),
    ],
)
def test_bad_settings_raise_value_error(setting: str, value: object) -> None:
    with pytest.raises(ValueError, match=setting):
        TokenSavingMiddleware(**{setting: value})


# -- head+tail compression ------------------------------------------------------------------


def test_old_outputs_are_compressed_in_the_request_and_kept_whole_in_state(o200k: Any) -> None:
    mw = TokenSavingMiddleware(token_counter=o200k, compress_once=False)
    result, model = run_agent(mw, episode(5))
    assert len(model.calls) == 6
    for k, call in enumerate(model.calls):
        sent = tool_contents(call.messages)
        assert len(sent) == k
        for i, content in enumerate(sent):
            old = i < k - 2  # all but the two most recent tool results
            assert content == (
                compress_tool_output(OUTPUTS[f"cmd{i}"]) if old else OUTPUTS[f"cmd{i}"]
            )
    assert tool_contents(result["messages"]) == [OUTPUTS[f"cmd{i}"] for i in range(5)]
    originals = [OUTPUTS[f"cmd{i}"] for i in range(3)]
    assert mw.stats.compressions == 3
    assert mw.stats.chars_saved == sum(len(o) - len(compress_tool_output(o)) for o in originals)
    assert mw.stats.tokens_saved == sum(
        o200k.count(o) - o200k.count(compress_tool_output(o)) for o in originals
    )
    assert mw.stats.early_exits == mw.stats.perplexity_compressions == 0


def test_disabled_compression_sends_everything() -> None:
    mw = TokenSavingMiddleware(enable_compression=False, compress_once=False)
    _, model = run_agent(mw, episode(5))
    assert tool_contents(model.calls[-1].messages) == [OUTPUTS[f"cmd{i}"] for i in range(5)]
    assert mw.stats.compressions == 0


def test_custom_window_threshold_and_sizes() -> None:
    mw = TokenSavingMiddleware(
        keep_recent_tool_messages=0, compress_threshold_chars=100, head_keep_chars=20,
        tail_keep_chars=10,
    )  # fmt: skip
    _, model = run_agent(mw, episode(2))
    expected = compress_tool_output(
        OUTPUTS["cmd0"], threshold_chars=100, head_chars=20, tail_chars=10
    )
    assert tool_contents(model.calls[1].messages) == [expected]


def test_replaced_messages_keep_every_field() -> None:
    mw = TokenSavingMiddleware(
        enable_perplexity_compression=True,
        perplexity_classifier=make_heuristic_classifier(),
        compress_once=False,
    )
    result, model = run_agent(mw, episode(6, thought=PROSE))
    last = model.calls[-1].messages
    originals = {m.id: m for m in result["messages"]}
    changed = [m for m in last if m.content != originals[m.id].content]
    assert {type(m) for m in changed} == {AIMessage, ToolMessage}
    for sent in changed:
        original = originals[sent.id]
        assert type(sent) is type(original)
        keep = sent.model_dump(exclude={"content"})
        assert keep == original.model_dump(exclude={"content"})
        if isinstance(sent, ToolMessage):
            assert sent.artifact == {"cmd": sent.artifact["cmd"], "exit": 1}
            assert sent.additional_kwargs == {"shell": "bash"}
            assert sent.status in ("error", "success") and sent.name == "run"
        else:
            assert sent.usage_metadata is not None and sent.tool_calls
    assert any(isinstance(m, ToolMessage) and m.status == "error" for m in changed)


# -- invoke, ainvoke, stacking, threads, checkpointer --------------------------------------


def _prompts(model: Any) -> list[list[tuple[str, str]]]:
    return [[(m.type, str(m.content)) for m in call.messages] for call in model.calls]


async def test_invoke_and_ainvoke_send_the_same_prompts() -> None:
    def settings() -> dict[str, Any]:
        return {
            "enable_perplexity_compression": True,
            "perplexity_classifier": make_heuristic_classifier(),
            "signals_fn": lambda steps: {"streak": 1.0 if len(steps) >= 4 else 0.0},
            "early_exit_min_call_index": 3,
            "compress_once": False,
        }

    sync_mw, async_mw = TokenSavingMiddleware(**settings()), TokenSavingMiddleware(**settings())
    _, sync_model = run_agent(sync_mw, episode(7, thought=PROSE))
    agent, async_model = scripted_agent(
        episode(7, thought=PROSE), tools=[run], middleware=[async_mw]
    )
    await agent.ainvoke(
        {"messages": [HumanMessage("fix the bug", id="h0")]}, {"configurable": {"thread_id": "t"}}
    )
    assert _prompts(async_model) == _prompts(sync_model)
    assert async_mw.stats == sync_mw.stats
    assert sync_mw.stats.early_exits == 1 and sync_mw.stats.perplexity_compressions > 0


class Marker(AgentMiddleware):
    """Another middleware that runs before ours: adds a note to every request."""

    def wrap_model_call(self, request: ModelRequest, handler: Any) -> Any:
        note = HumanMessage("(note from another middleware)", id="note")
        return handler(request.override(messages=[*request.messages, note]))


def test_stacks_after_other_middleware() -> None:
    cleared: list[str] = []

    @wrap_model_call
    def clear_first_output(request: ModelRequest, handler: Any) -> Any:
        # an outer middleware that edits a tool result itself: ours must not overwrite that
        messages = list(request.messages)
        for i, m in enumerate(messages):
            if isinstance(m, ToolMessage) and m.tool_call_id == "call-0":
                messages[i] = m.model_copy(update={"content": "[cleared]"})
                cleared.append("x")
        return handler(request.override(messages=messages))

    mw = TokenSavingMiddleware(compress_once=False)
    agent, model = scripted_agent(
        episode(5), tools=[run], middleware=[Marker(), clear_first_output, mw]
    )
    agent.invoke({"messages": [HumanMessage("go", id="h0")]}, {"configurable": {"thread_id": "s"}})
    last = model.calls[-1].messages
    assert last[-1].content == "(note from another middleware)"
    sent = tool_contents(last)
    assert sent[0] == "[cleared]" and cleared
    assert sent[1:3] == [compress_tool_output(OUTPUTS[f"cmd{i}"]) for i in (1, 2)]


def test_one_instance_serves_many_threads() -> None:
    mw = TokenSavingMiddleware(compress_once=False)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            agent, _ = scripted_agent(episode(5), tools=[run], middleware=[mw])
            config = {"configurable": {"thread_id": f"thread-{n}"}}
            agent.invoke({"messages": [HumanMessage("go", id="h0")]}, config)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert mw.stats.compressions == 4 * 3


def test_sqlite_checkpointer_persists_compressions(tmp_path: Path) -> None:
    config = {"configurable": {"thread_id": "persist"}}
    with SqliteSaver.from_conn_string(str(tmp_path / "state.db")) as saver:
        first = TokenSavingMiddleware(compress_once=False)
        agent, model = scripted_agent(
            episode(4), tools=[run], middleware=[first], checkpointer=saver
        )
        agent.invoke({"messages": [HumanMessage("go", id="h0")]}, config)
        values = agent.get_state(config).values
        tool_ids = [m.id for m in values["messages"] if isinstance(m, ToolMessage)]
        assert set(values[COMPRESSED_KEY]) == set(tool_ids[:2])

    with SqliteSaver.from_conn_string(str(tmp_path / "state.db")) as saver:
        second = TokenSavingMiddleware(
            compress_once=False
        )  # a fresh instance, as in another process
        responses = [step(10, "cmd5"), AIMessage("done again", id="ai-final-2")]
        agent2, model2 = scripted_agent(
            responses, tools=[run], middleware=[second], checkpointer=saver
        )
        agent2.invoke({"messages": [HumanMessage("and now?", id="h1")]}, config)
    before = tool_contents(model.calls[-1].messages)
    assert tool_contents(model2.calls[0].messages) == before  # the same bytes from the checkpoint
    after = tool_contents(model2.calls[1].messages)
    assert after[:2] == before[:2]
    assert after[2] == compress_tool_output(OUTPUTS["cmd2"])  # one more left the window
    assert second.stats.compressions == 1  # cmd0 and cmd1 were compressed by the first instance


# -- what must pass through untouched ----------------------------------------------------------


def test_bad_messages_pass_through(caplog: pytest.LogCaptureFixture) -> None:
    image = [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 5000}}]
    surrogate = "bad \ud800 bytes " * 400
    huge = "0123456789" * 200_000

    @tool
    def odd(kind: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
        """Return unusual tool content."""
        content: Any = {"image": image, "surrogate": surrogate, "huge": huge}.get(kind, "ok")
        return ToolMessage(content=content, tool_call_id=tool_call_id, name="odd")

    parallel = AIMessage(
        "",
        id="ai-p",
        tool_calls=[
            {"id": f"p-{kind}", "name": "odd", "args": {"kind": kind}}
            for kind in ("image", "surrogate", "huge")
        ],
    )
    responses = [parallel, *(step(i) for i in range(1, 4)), AIMessage("done", id="ai-final")]
    agent, model = scripted_agent(
        responses, tools=[odd, run], middleware=[TokenSavingMiddleware(compress_once=False)]
    )
    agent.invoke({"messages": [HumanMessage("go", id="h0")]}, {"configurable": {"thread_id": "b"}})
    last = model.calls[-1].messages
    by_call = {m.tool_call_id: m for m in last if isinstance(m, ToolMessage)}
    assert by_call["p-image"].content == image
    assert by_call["p-surrogate"].content == compress_tool_output(surrogate)
    assert by_call["p-huge"].content == compress_tool_output(huge)
    for message in last:  # pairing stays valid: every call is answered, in order
        for call in getattr(message, "tool_calls", []):
            assert call["id"] in by_call


def test_failures_are_logged_and_swallowed(caplog: pytest.LogCaptureFixture) -> None:
    class BrokenCounter:
        def count(self, text: str) -> int:
            raise RuntimeError("counter down")

    def broken_classifier(words: list[str]) -> list[bool]:
        raise RuntimeError("classifier down")

    def broken_signals(steps: list[Any]) -> dict[str, float]:
        raise RuntimeError("signals down")

    mw = TokenSavingMiddleware(
        token_counter=BrokenCounter(),
        enable_perplexity_compression=True,
        perplexity_classifier=broken_classifier,
        signals_fn=broken_signals,
        early_exit_min_call_index=0,
    )
    _, base_model = run_agent(
        TokenSavingMiddleware(enable_compression=False, compress_once=False), episode(5)
    )
    with caplog.at_level(logging.WARNING):
        result, model = run_agent(mw, episode(5))
    assert _prompts(model) == _prompts(base_model)  # nothing could be compressed or nudged
    assert result["messages"][-1].content == "done"
    assert "signals_fn failed" in caplog.text and "could not compress" in caplog.text


def test_word_compression_needs_a_classifier(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        mw = TokenSavingMiddleware(enable_perplexity_compression=True, enable_compression=False)
    assert "without perplexity_classifier" in caplog.text
    _, model = run_agent(mw, episode(12, thought=PROSE))
    assert [m.content for m in model.calls[-1].messages if isinstance(m, AIMessage)] == [PROSE] * 12


# -- build_steps_from_messages -----------------------------------------------------------------


def test_build_steps_pairs_every_call_by_id() -> None:
    messages = [
        HumanMessage("go"),
        AIMessage(
            "two at once",
            tool_calls=[
                {"id": "a", "name": "grep", "args": {"q": "x"}},
                {"id": "b", "name": "cat", "args": {"path": "f.py"}},
            ],
        ),
        ToolMessage("cat output", tool_call_id="b"),
        ToolMessage("boom", tool_call_id="a", status="error"),
        AIMessage("thinking only"),
    ]
    assert build_steps_from_messages(messages) == [
        {"step_index": 0, "action": "grep", "action_input": {"q": "x"}, "thought": "two at once",
         "observation": "boom", "is_error": True},
        {"step_index": 1, "action": "cat", "action_input": {"path": "f.py"},
         "thought": "two at once", "observation": "cat output", "is_error": False},
        {"step_index": 2, "action": "", "action_input": {}, "thought": "thinking only",
         "observation": "", "is_error": False},
    ]  # fmt: skip


# -- invariants on any history ------------------------------------------------------------------

SHAPES: dict[str, Any] = {
    "small": "ok, 3 files changed",
    "big": output(7, 4000),
    "prose": " ".join([PROSE] * 3),
    "blocks": [{"type": "text", "text": output(6, 2500)}, {"type": "text", "text": PROSE}],
    "image": [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + "B" * 3000}}],
}


@tool
def shaped(kind: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Return content of the given shape."""
    return ToolMessage(
        content=SHAPES[kind], tool_call_id=tool_call_id, name="shaped", id=f"t-{tool_call_id}"
    )


def _shape(message: BaseMessage) -> tuple[Any, ...]:
    return (
        type(message),
        message.id,
        getattr(message, "tool_call_id", None),
        [c["id"] for c in getattr(message, "tool_calls", [])],
        getattr(message, "status", None),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(st.sampled_from(sorted(SHAPES)), min_size=1, max_size=3), max_size=6),
    st.integers(0, 3),
    st.booleans(),
)
def test_any_history_keeps_its_shape(steps: list[list[str]], keep_recent: int, once: bool) -> None:
    responses = [
        AIMessage(
            PROSE,
            id=f"ai-{i}",
            tool_calls=[
                {"id": f"c-{i}-{j}", "name": "shaped", "args": {"kind": kind}}
                for j, kind in enumerate(kinds)
            ],
        )
        for i, kinds in enumerate(steps)
    ] + [AIMessage("done", id="ai-final")]
    mw = TokenSavingMiddleware(
        keep_recent_tool_messages=keep_recent,
        compress_once=once,
        enable_perplexity_compression=True,
        perplexity_classifier=make_heuristic_classifier(),
        perplexity_recent_cutoff=1,
        perplexity_min_content_words=5,
        payback_calls=1000,
    )
    base_agent, base = scripted_agent(responses, tools=[shaped])
    agent, model = scripted_agent(responses, tools=[shaped], middleware=[mw])
    config = {"configurable": {"thread_id": "p"}}
    base_agent.invoke({"messages": [HumanMessage("go", id="h")]}, config)
    agent.invoke({"messages": [HumanMessage("go", id="h")]}, config)
    assert len(model.calls) == len(base.calls)
    for ours, theirs in zip(model.calls, base.calls, strict=True):
        assert [_shape(m) for m in ours.messages] == [_shape(m) for m in theirs.messages]
        answered = {m.tool_call_id for m in ours.messages if isinstance(m, ToolMessage)}
        for m, original in zip(ours.messages, theirs.messages, strict=True):
            assert all(c["id"] in answered for c in getattr(m, "tool_calls", []))
            if m.content != original.content:
                assert len(str(m.content)) < len(str(original.content))
                assert not (
                    isinstance(original.content, list) and "image_url" in str(original.content)
                )
