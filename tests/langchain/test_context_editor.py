"""ContextEditorMiddleware in a real ``create_agent``: every option, as the model receives it."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import StructuredTool, tool

from tokenlean.context_editor import ContextEdit, RequestView
from tokenlean.langchain import ContextEditorMiddleware, ToolOutputShorteningMiddleware
from tokenlean.langchain._adapter import to_view
from tokenlean.testing import scripted_agent
from tokenlean.tokens import EstimateCounter, count_request
from tokenlean.transcript import canonical


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return "\n".join(f"{path}:{n}: value_{n} = compute({n}, {n * 7})" for n in range(40))


@tool
def status() -> str:
    """A short status line."""
    return "ok"


@tool
def notes(topic: str) -> str:
    """Long notes the agent must keep."""
    return f"notes on {topic}: " + " ".join(f"point_{n}" for n in range(150))


def _calls(n: int, name: str = "read_file", start: int = 0) -> list[AIMessage]:
    out = []
    for i in range(start, start + n):
        args: dict[str, Any] = {"path": f"src/mod_{i}.py"} if name == "read_file" else {}
        if name == "notes":
            args = {"topic": f"t{i}"}
        call = {"id": f"call_{i}", "name": name, "args": args, "type": "tool_call"}
        out.append(AIMessage(content=f"step {i}", id=f"ai_{i}", tool_calls=[call]))
    return out


def _run(
    middleware: Sequence[Any],
    responses: Sequence[Any],
    tools: Sequence[Any] = (read_file, status, notes),
    system_prompt: str = "You fix bugs.",
) -> tuple[Any, dict[str, Any]]:
    agent, model = scripted_agent(
        [*responses, AIMessage(content="done", id="ai_final")],
        tools=tools,
        middleware=middleware,
        system_prompt=system_prompt,
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("fix it", id="h0")]}, config)
    return model, dict(agent.get_state(config).values)  # private fields are in the checkpoint


def _results(messages: Sequence[BaseMessage]) -> dict[str, str]:
    return {m.tool_call_id: m.text for m in messages if isinstance(m, ToolMessage)}


def _cleared(messages: Sequence[BaseMessage]) -> list[str]:
    return [
        m.tool_call_id
        for m in messages
        if isinstance(m, ToolMessage) and "cleared to save context" in m.text
    ]


def test_below_the_trigger_the_request_is_untouched() -> None:
    model, _ = _run([ContextEditorMiddleware(mode="plain")], _calls(12))
    assert all(not _cleared(c.messages) for c in model.calls)


def test_clears_old_results_in_whole_batches_keeps_newest_and_state_keeps_all() -> None:
    edits: list[ContextEdit] = []
    editor = ContextEditorMiddleware(
        mode="plain", trigger_tokens=2_000, keep=3, batch=5, on_edit=edits.append
    )
    model, state = _run([editor], _calls(16))
    last = model.calls[-1].messages
    cleared = _cleared(last)
    assert cleared and len(cleared) % 5 == 0
    assert cleared == [f"call_{i}" for i in range(len(cleared))]  # oldest first
    tool_ids = [m.tool_call_id for m in last if isinstance(m, ToolMessage)]
    assert not set(tool_ids[-3:]) & set(cleared)  # the newest three are whole
    assert "[`read_file` result cleared to save context (" in _results(last)["call_0"]
    assert "call the tool again" in _results(last)["call_0"]
    # the state (and so the checkpoint) keeps every original result
    assert all("value_39" in text for text in _results(state["messages"]).values())
    assert set(state["tokenlean_context_editor"]) == set(cleared)
    # on_edit: what was cleared, the request's tokens before and after
    assert sum(len(e.cleared) for e in edits) == len(cleared)
    assert all(e.tokens_after < e.tokens_before and e.batches >= 1 for e in edits)
    assert edits[0].tokens_before > 2_000 and edits[0].cleared[0].tool == "read_file"


def test_cleared_results_keep_identical_bytes_and_edits_are_rare() -> None:
    edits: list[ContextEdit] = []
    editor = ContextEditorMiddleware(mode="plain", trigger_tokens=2_000, on_edit=edits.append)
    model, _ = _run([editor], _calls(30))
    sent: dict[str, str] = {}
    changed_calls = 0
    for call in model.calls:
        view = [canonical(m) for m in to_view(call.messages)]
        ids = [m.id for m in call.messages]
        before = dict(sent)
        sent.update(zip(ids, view, strict=True))
        changed_calls += any(before.get(i, v) != v for i, v in zip(ids, view, strict=True))
    # the prompt changes exactly on the calls that grew the cleared set, never on the others
    assert changed_calls == len(edits)
    assert 1 <= len(edits) < len(model.calls) // 3


def test_fewer_than_a_batch_of_candidates_clears_nothing() -> None:
    editor = ContextEditorMiddleware(mode="plain", trigger_tokens=500, keep=3, batch=5)
    model, _ = _run([editor], _calls(7))  # at most 4 results are ever older than the newest 3
    assert all(not _cleared(c.messages) for c in model.calls)


def test_excluded_and_tiny_results_are_never_cleared() -> None:
    editor = ContextEditorMiddleware(
        mode="plain", trigger_tokens=1_500, batch=2, exclude_tools=["notes"]
    )
    calls = _calls(4, "notes") + _calls(4, "status", 4) + _calls(10, "read_file", 8)
    model, _ = _run([editor], calls)
    cleared = set(_cleared(model.calls[-1].messages))
    assert cleared and all(c.startswith("call_") for c in cleared)
    assert not cleared & {f"call_{i}" for i in range(8)}  # notes excluded, status too small


def test_clear_tool_inputs_empties_only_the_cleared_calls_arguments() -> None:
    editor = ContextEditorMiddleware(mode="plain", trigger_tokens=2_000, clear_tool_inputs=True)
    model, state = _run([editor], _calls(16))
    last = model.calls[-1].messages
    cleared = set(_cleared(last))
    args = {c["id"]: c["args"] for m in last if isinstance(m, AIMessage) for c in m.tool_calls}
    assert cleared and all(args[i] == {} for i in cleared)
    assert all(args[i] for i in set(args) - cleared)
    kept = {c["id"]: c["args"] for m in state["messages"] if isinstance(m, AIMessage)
            for c in m.tool_calls}  # fmt: skip
    assert all(kept.values())  # state keeps every argument


def test_placeholder_string_and_callable() -> None:
    fixed = ContextEditorMiddleware(mode="plain", trigger_tokens=2_000, placeholder="[gone]")
    model, _ = _run([fixed], _calls(16))
    assert "[gone]" in _results(model.calls[-1].messages).values()

    seen: list[tuple[str, int]] = []

    def describe(tool_name: str, length: int) -> str:
        seen.append((tool_name, length))
        return f"<{tool_name}: {length} chars>"

    model, state = _run(
        [ContextEditorMiddleware(mode="plain", trigger_tokens=2_000, placeholder=describe)],
        _calls(16),
    )
    original = _results(state["messages"])["call_0"]
    assert _results(model.calls[-1].messages)["call_0"] == f"<read_file: {len(original)} chars>"
    assert ("read_file", len(original)) in seen


def test_placeholder_names_read_original_which_reads_the_cleared_result_back() -> None:
    editor = ContextEditorMiddleware(mode="plain", trigger_tokens=2_000)
    # a shortener that offers read_original from the first call (by default the tool joins once
    # the cuts have paid for it); it shortens only read_file results, here the first one
    reader = ToolOutputShorteningMiddleware(
        min_tokens=100, only=["read_file"], max_tokens=40, offer_tool="always"
    )
    read_back = AIMessage(
        "",
        id="ai-read",
        tool_calls=[{"id": "r1", "name": "read_original", "args": {"handle": "call_1"}}],
    )
    steps = [*_calls(1), *_calls(15, name="notes", start=1), read_back]
    model, state = _run([reader, editor], steps)
    assert "read_original" in [t["function"]["name"] for t in model.calls[-1].tools]
    text = _results(model.calls[-1].messages)["call_1"]
    assert 'call `read_original` with "call_1"' in text
    answer = _results(state["messages"])["r1"]
    assert "point_149" in answer and answer.startswith("1: ")  # the whole original, numbered


def test_token_estimator_counter_and_function() -> None:
    requests: list[RequestView] = []

    def estimate(request: RequestView) -> int:
        requests.append(request)
        return 10 * count_request(request.messages, EstimateCounter(), system=request.system)

    model, _ = _run(
        [ContextEditorMiddleware(mode="plain", trigger_tokens=20_000, token_estimator=estimate)],
        _calls(12),
    )
    assert _cleared(
        model.calls[-1].messages
    )  # the inflated estimate fires where the default would not
    assert requests[0].system == "You fix bugs." and requests[0].tools

    class Huge:
        def count(self, text: str) -> int:
            return 100 * len(text)

    model, _ = _run([ContextEditorMiddleware(mode="plain", token_estimator=Huge())], _calls(12))
    assert _cleared(model.calls[-1].messages)


def _search(query: str) -> str:
    return "nothing"


big_schema = StructuredTool.from_function(
    _search,
    name="search",
    description="Search. " + "This long documentation explains every option in detail. " * 300,
)


@pytest.mark.parametrize("padding", ["system", "tools"])
def test_trigger_counts_system_prompt_and_tool_schemas(padding: str) -> None:
    def run(padded: bool) -> list[str]:
        system = "You fix bugs. " + "Follow the house rules carefully. " * 600
        model, _ = _run(
            [ContextEditorMiddleware(mode="plain", trigger_tokens=12_000, keep=3)],
            _calls(10),
            tools=(read_file, big_schema) if padded and padding == "tools" else (read_file,),
            system_prompt=system if padded and padding == "system" else "You fix bugs.",
        )
        return _cleared(model.calls[-1].messages)

    assert not run(padded=False)  # the messages alone stay under the trigger
    assert run(padded=True)


def test_async_matches_sync() -> None:
    editor_sync = ContextEditorMiddleware(mode="plain", trigger_tokens=2_000)
    model_sync, _ = _run([editor_sync], _calls(16))

    async def run_async() -> Any:
        agent, model = scripted_agent(
            [*_calls(16), AIMessage(content="done", id="ai_final")],
            tools=(read_file, status, notes),
            middleware=[ContextEditorMiddleware(mode="plain", trigger_tokens=2_000)],
            system_prompt="You fix bugs.",
        )
        await agent.ainvoke(
            {"messages": [HumanMessage("fix it", id="h0")]}, {"configurable": {"thread_id": "t"}}
        )
        return model

    import asyncio

    model_async = asyncio.run(run_async())
    assert [[m.text for m in c.messages] for c in model_async.calls] == [
        [m.text for m in c.messages] for c in model_sync.calls
    ]


def test_deterministic_across_runs() -> None:
    first, _ = _run([ContextEditorMiddleware(mode="plain", trigger_tokens=2_000)], _calls(20))
    second, _ = _run([ContextEditorMiddleware(mode="plain", trigger_tokens=2_000)], _calls(20))
    assert [[canonical(m) for m in to_view(c.messages)] for c in first.calls] == [
        [canonical(m) for m in to_view(c.messages)] for c in second.calls
    ]


def test_cleared_set_survives_a_sqlite_checkpoint(tmp_path: Path) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    config: Any = {"configurable": {"thread_id": "resume"}}
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:
        agent, model = scripted_agent(
            [*_calls(14), AIMessage(content="paused", id="ai_p")],
            tools=(read_file,),
            middleware=[ContextEditorMiddleware(mode="plain", trigger_tokens=2_000)],
            checkpointer=saver,
        )
        agent.invoke({"messages": [HumanMessage("go", id="h0")]}, config)
        cleared_before = _cleared(model.calls[-1].messages)
        placeholders = {
            k: v for k, v in _results(model.calls[-1].messages).items() if k in cleared_before
        }
    assert cleared_before
    with SqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite")) as saver:  # a new process's view
        agent, model = scripted_agent(
            [AIMessage(content="done", id="ai_d")],
            tools=(read_file,),
            middleware=[ContextEditorMiddleware(mode="plain", trigger_tokens=2_000)],
            checkpointer=saver,
        )
        agent.invoke({"messages": [HumanMessage("continue", id="h1")]}, config)
    sent = _results(model.calls[0].messages)
    assert {k: sent[k] for k in cleared_before} == placeholders


def test_results_cleared_by_langchain_are_not_cleared_again() -> None:
    # LangChain clears the oldest result from early on; ours fires later on the rest.
    # Its placeholder is long enough that only the marker keeps ours from clearing it again.
    long_placeholder = "[cleared] " + "the old output of this tool was removed; " * 20
    langchain_edit = ClearToolUsesEdit(
        trigger=500, keep=3, clear_at_least=1, placeholder=long_placeholder
    )
    langchain_editor = ContextEditingMiddleware(edits=[langchain_edit])
    ours = ContextEditorMiddleware(mode="plain", trigger_tokens=4_000, batch=1, keep=3)
    model, _ = _run([langchain_editor, ours], _calls(14))
    by_langchain: set[str] = set()
    by_us: set[str] = set()
    for call in model.calls:
        for key, text in _results(call.messages).items():
            if text == long_placeholder:
                assert key not in by_us  # ours stay ours, with the same bytes
                by_langchain.add(key)
            elif "cleared to save context" in text:
                assert key not in by_langchain  # never edited twice
                by_us.add(key)
    assert by_langchain and by_us


def test_cache_aware_clears_only_when_it_pays() -> None:
    # No calls to come: re-writing the cache can never pay back under Anthropic pricing.
    stingy = ContextEditorMiddleware(trigger_tokens=2_000, mode="cache_aware", expected_calls=1)
    model, _ = _run([stingy], _calls(16))
    assert not _cleared(model.calls[-1].messages)
    # Without a cache a break costs nothing, so it clears just as plain mode does.
    free = ContextEditorMiddleware(trigger_tokens=2_000, mode="cache_aware", pricing="none")
    plain = ContextEditorMiddleware(mode="plain", trigger_tokens=2_000)
    free_model, _ = _run([free], _calls(16))
    plain_model, _ = _run([plain], _calls(16))
    assert _cleared(free_model.calls[-1].messages) == _cleared(plain_model.calls[-1].messages)
    edits: list[ContextEdit] = []
    aware = ContextEditorMiddleware(
        trigger_tokens=2_000, mode="cache_aware", horizon=1.0, on_edit=edits.append
    )
    _run([aware], _calls(16))
    assert edits and all(e.net_saving is not None and e.net_saving > 0 for e in edits)


def _first_cleared_call(model: Any) -> int | None:
    return next((i for i, call in enumerate(model.calls) if _cleared(call.messages)), None)


def test_by_default_a_clearing_must_pay_back_within_a_tenth_of_the_calls_so_far() -> None:
    # A clearing just before the run ends costs its whole re-write: by default the editor counts
    # only on calls the run very likely still makes (a tenth of those made), not on the median.
    assert ContextEditorMiddleware().config.mode == "cache_aware"
    short, _ = _run([ContextEditorMiddleware(trigger_tokens=2_000)], _calls(16))
    assert _first_cleared_call(short) is None  # the median (horizon=1.0) clears this run
    median, _ = _run([ContextEditorMiddleware(trigger_tokens=2_000, horizon=1.0)], _calls(40))
    edits: list[ContextEdit] = []
    default = ContextEditorMiddleware(trigger_tokens=2_000, on_edit=edits.append)
    cautious, _ = _run([default], _calls(40))
    first_median, first_default = _first_cleared_call(median), _first_cleared_call(cautious)
    assert first_median is not None and first_default is not None
    assert first_default > first_median
    assert edits and all(e.net_saving is not None and e.net_saving > 0 for e in edits)


@pytest.mark.parametrize(
    "options",
    [
        {"trigger_tokens": -1},
        {"keep": -2},
        {"batch": 0},
        {"exclude_tools": "notes"},
        {"placeholder": 3},
        {"mode": "greedy"},
        {"pricing": "azure"},
        {"expected_calls": 0},
        {"horizon": 0},
        {"horizon": "long"},
        {"token_estimator": 42},
        {"on_edit": "print"},
    ],
)
def test_bad_options_raise_value_error(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ContextEditorMiddleware(**options)


def test_failures_are_logged_and_the_request_passes_unchanged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(request: RequestView) -> int:
        raise RuntimeError("estimator down")

    def bad_callback(edit: ContextEdit) -> None:
        raise RuntimeError("callback down")

    with caplog.at_level(logging.ERROR):
        model, _ = _run([ContextEditorMiddleware(mode="plain", token_estimator=broken)], _calls(6))
        assert "estimator down" in caplog.text
        assert not _cleared(model.calls[-1].messages)
        model, _ = _run(
            [ContextEditorMiddleware(mode="plain", trigger_tokens=2_000, on_edit=bad_callback)],
            _calls(16),
        )
    assert "callback down" in caplog.text
    assert _cleared(model.calls[-1].messages)  # the edit still happened


def test_non_text_results_and_unpaired_results_pass_through() -> None:
    def respond(messages: list[BaseMessage]) -> AIMessage:
        return AIMessage(content="done", id="ai_end")

    image = [
        {"type": "image", "url": "https://example.com/x.png"},
        {"type": "text", "text": "x" * 4000},
    ]
    history: list[BaseMessage] = [HumanMessage("go", id="h0")]
    for i in range(10):
        call = {"id": f"c{i}", "name": "read_file", "args": {"path": str(i)}, "type": "tool_call"}
        history.append(AIMessage(content="", id=f"a{i}", tool_calls=[call]))
        content: Any = image if i == 0 else "y " * 2000
        history.append(ToolMessage(content=content, tool_call_id=f"c{i}", id=f"t{i}"))
    history.append(ToolMessage(content="z " * 2000, tool_call_id="orphan", id="t_orphan"))
    agent, model = scripted_agent(
        [respond],
        tools=(read_file,),
        middleware=[ContextEditorMiddleware(mode="plain", trigger_tokens=1_000, keep=3)],
    )
    agent.invoke({"messages": history}, {"configurable": {"thread_id": "x"}})
    sent = {m.id: m for m in model.calls[0].messages}
    assert sent["t0"].content == image  # images are never rewritten
    assert sent["t_orphan"].text == "z " * 2000  # an orphan result is not ours to pair
    assert _cleared(model.calls[0].messages)  # the rest still works


def test_the_tool_schemas_are_sized_once_per_tool_list() -> None:
    from tokenlean.langchain._helpers import tool_schemas

    editor = ContextEditorMiddleware()
    tools = [StructuredTool.from_function(lambda path: path, name="read", description="Read.")]
    first = editor._fixed("system", tools)
    assert editor._fixed("system", tools) is first  # nothing converted or counted again
    assert first.schemas == tool_schemas(tools)
    assert editor._fixed("other system", tools).tokens != first.tokens
    schema = {"type": "function", "function": {"name": "a", "description": "A tool."}}
    sized = editor._fixed("system", [schema])
    schema["function"]["name"] = "renamed"  # a mapping can change in place: read again
    again = editor._fixed("system", [schema])
    assert again.schemas is None and again.tokens == sized.tokens
