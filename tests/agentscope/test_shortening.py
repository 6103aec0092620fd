"""First-sight shortening inside a real AgentScope ``Agent``: what the model was sent.

A :class:`~tokenlean.testing.agentscope.ScriptedChatModel` formats every request with
AgentScope's own Anthropic formatter and records it; the tools are real ``Toolkit`` tools. So
each test asserts what the provider would have received, call by call.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
from pathlib import Path

import pytest
from agentscope.message import Base64Source, DataBlock
from agentscope.tool import ToolChunk

from tests.agentscope.support import ask, memory_results, results, sent_json
from tests.data import ERROR, LOG, SCRIPT, one_run_per_source, skip_unless_here
from tokenlean.agentscope import (
    ToolInputShorteningMiddleware,
    ToolOutputShorteningMiddleware,
    recommended_middleware,
)
from tokenlean.raw import RawSettings
from tokenlean.replay._formats import load_trajectory
from tokenlean.store import FolderOriginalStore, InMemoryOriginalStore
from tokenlean.testing.agentscope import (
    RecordedTool,
    prefix_breaks,
    replay_messages,
    scripted_agent,
    turn,
)
from tokenlean.transcript import Message, ToolCall

PNG = (  # a 1x1 image
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
#: The tests of what the tool reads and what the middleware writes offer the tool to every run;
#: which runs are offered it by default is tested on its own (``test_a_run_*``).
OFFERED = RawSettings(offer_tool="always")
HANDLE = re.compile(r'read_original\("([a-z]\d{12})"')


def _log_agent(mw, *after):  # type: ignore[no-untyped-def]
    turns = [turn(calls=[("c1", "bash", {"cmd": "pytest"})]), *after, turn("it failed")]
    return scripted_agent(turns, tools=[RecordedTool("bash", [LOG])], middlewares=[mw])


def test_a_long_log_is_shortened_before_the_model_first_sees_it() -> None:
    mw = ToolOutputShorteningMiddleware(settings=OFFERED)
    agent, model = _log_agent(mw)
    ask(agent)
    first_sight = results(model.calls[1])[0]
    assert ERROR in first_sight
    assert len(first_sight) < len(LOG) / 5
    assert mw.stats.results_shortened == 1
    # memory holds the shortened result (written once), marked so no later call plans it again
    (block,) = memory_results(agent)
    assert block.output[0].text == first_sight
    assert block.metadata.get("tokenlean")


def test_the_retrieval_tool_is_there_from_the_first_call_and_reads_the_original() -> None:
    mw = ToolOutputShorteningMiddleware(settings=OFFERED)
    agent, model = _log_agent(mw)
    ask(agent)
    handle = HANDLE.search(results(model.calls[1])[0]).group(1)  # type: ignore[union-attr]
    read = {"handle": handle, "lines": "2-5"}
    model.push(turn(calls=[("c2", "read_original", read)]), turn("ok"))
    ask(agent, "show me the start")
    assert [c.tool_names() for c in model.calls] == [["bash", "read_original"]] * len(model.calls)
    answer = results(model.calls[-1])[-1]
    assert "tests/test_api.py::test_case_1 PASSED" in answer
    assert "test_case_4 PASSED" in answer


def test_a_run_whose_first_prompt_is_short_is_never_offered_the_tool() -> None:
    # its schema, sent on every call, would cost more than its cuts save: no call lists it,
    # and no marker names it (the log is cut only where nothing needs reading back)
    agent, model = _log_agent(ToolOutputShorteningMiddleware())
    ask(agent)
    assert [c.tool_names() for c in model.calls] == [["bash"]] * 2
    assert "read_original" not in results(model.calls[1])[0]
    assert prefix_breaks(model) == []


def test_a_run_whose_first_prompt_is_long_is_offered_the_tool_from_its_first_call() -> None:
    mw = ToolOutputShorteningMiddleware()
    turns = [turn(calls=[("c1", "bash", {"cmd": "pytest"})]), turn("it failed")]
    long = "Follow the repository's conventions and keep changes small. " * 2000
    agent, model = scripted_agent(
        turns, tools=[RecordedTool("bash", [LOG])], middlewares=[mw], system_prompt=long
    )
    ask(agent)
    assert [c.tool_names() for c in model.calls] == [["bash", "read_original"]] * 2
    assert HANDLE.search(results(model.calls[1])[0])
    assert prefix_breaks(model) == []


def test_a_run_not_offered_the_tool_at_its_first_call_is_never_offered_it_later() -> None:
    # the toolkit grows mid-run (a long tool description): the first call's rule is not asked
    # again, as the tool joining the list mid-run would re-write the cached prompt
    agent, model = _log_agent(ToolOutputShorteningMiddleware())
    ask(agent)
    described = "Query the warehouse with SQL; see the schema notes below. " * 2000
    asyncio.run(agent.toolkit.add_tool(RecordedTool("sql", ["ok"], description=described)))
    model.push(turn(calls=[("c2", "bash", {"cmd": "pytest -x"})]), turn("still failing"))
    ask(agent, "again")
    assert all("read_original" not in c.tool_names() for c in model.calls)


def test_originals_can_go_to_files_the_agent_reads(tmp_path: Path) -> None:
    store = FolderOriginalStore(tmp_path)
    mw = ToolOutputShorteningMiddleware(store=store, read_back="file")
    agent, model = _log_agent(mw)
    ask(agent)
    assert model.calls[0].tool_names() == ["bash"]  # no tool is added
    text = results(model.calls[1])[0]
    assert ERROR in text
    named = [p for p in tmp_path.rglob("*") if p.is_file() and p.name in text]
    assert named and LOG in named[0].read_text()


def test_later_calls_send_what_earlier_calls_sent_byte_for_byte() -> None:
    mw = ToolOutputShorteningMiddleware(inputs=True)
    turns = [
        turn(calls=[("c1", "bash", {"cmd": SCRIPT})]),
        turn(calls=[("c2", "bash", {"cmd": "pytest"})]),
        turn(calls=[("c3", "bash", {"cmd": "pytest -x"})]),
        turn("done"),
    ]
    tool = RecordedTool("bash", ["step output\n" * 3, LOG, LOG.replace("refund", "charge")])
    agent, model = scripted_agent(turns, tools=[tool], middlewares=[mw])
    ask(agent)
    assert len(model.calls) == 4
    assert prefix_breaks(model) == []
    sent = sent_json(model.calls)
    assert all(len(a) < len(b) for a, b in itertools.pairwise(sent))


def test_long_inputs_of_calls_that_ran_are_cut_and_read_back() -> None:
    mw = ToolInputShorteningMiddleware(settings=OFFERED)
    turns = [turn(calls=[("c1", "bash", {"cmd": SCRIPT})]), turn("done")]
    agent, model = scripted_agent(turns, tools=[RecordedTool("bash", ["ok"])], middlewares=[mw])
    ask(agent)
    (use,) = [b for m in model.calls[1].messages for b in m["content"] if b["type"] == "tool_use"]
    assert len(use["input"]["cmd"]) < len(SCRIPT) / 3
    assert use["input"]["cmd"].startswith("python - <<'EOF'")
    assert mw.stats.inputs_cut == 1 and mw.stats.results_shortened == 0


def test_results_with_data_and_short_results_pass_unchanged() -> None:
    class Screenshot(RecordedTool):
        async def call(self, **kwargs):  # type: ignore[no-untyped-def]
            image = DataBlock(source=Base64Source(data=PNG, media_type="image/png"))
            return ToolChunk(content=[image])

    mw = ToolOutputShorteningMiddleware()
    turns = [
        turn(calls=[("c1", "shot", {}), ("c2", "bash", {"cmd": "ls"})]),
        turn("done"),
    ]
    agent, model = scripted_agent(
        turns, tools=[Screenshot("shot"), RecordedTool("bash", ["a\nb"])], middlewares=[mw]
    )
    plain, plain_model = scripted_agent(
        [turn(calls=[("c1", "shot", {}), ("c2", "bash", {"cmd": "ls"})]), turn("done")],
        tools=[Screenshot("shot"), RecordedTool("bash", ["a\nb"])],
    )
    ask(agent)
    ask(plain)
    assert mw.stats.results_shortened == 0
    assert model.calls[1].messages[2:] == plain_model.calls[1].messages[2:]


class _BrokenStore(InMemoryOriginalStore):
    def put(self, scope: str, original) -> None:  # type: ignore[no-untyped-def,override]
        raise OSError("disk full")


def test_a_failure_leaves_the_context_as_it_was(caplog: pytest.LogCaptureFixture) -> None:
    mw = ToolOutputShorteningMiddleware(settings=OFFERED, store=_BrokenStore())
    agent, model = _log_agent(mw)
    with caplog.at_level(logging.WARNING, logger="tokenlean"):
        ask(agent)
    assert results(model.calls[1]) == [LOG]  # sent whole: nothing names an original not kept
    assert mw.stats.errors >= 1
    assert any("could not shorten" in r.getMessage() for r in caplog.records)


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="settings"):
        ToolOutputShorteningMiddleware(settings={"min_tokens": 5})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="inputs"):
        ToolOutputShorteningMiddleware(inputs="yes")  # type: ignore[arg-type]
    quiet = ToolOutputShorteningMiddleware(settings=RawSettings(min_tokens=100_000))
    agent, model = _log_agent(quiet)
    ask(agent)
    assert results(model.calls[1]) == [LOG]


def test_a_system_message_recorded_mid_run_reaches_the_model_as_user_text() -> None:
    """An ``Agent`` refuses a system message as input: a recorded one (a Codex developer
    message) is given as a user message, which the formatter sends as the user's text."""
    call = ToolCall("c1", "exec", {"input": "ls"})
    messages = [
        Message(role="system", content="You are Codex."),
        Message(role="user", content="fix it"),
        Message(role="assistant", tool_calls=(call,)),
        Message(role="tool", content="a.py", tool_call_id="c1"),
        Message(role="system", content="<collaboration_mode>Plan</collaboration_mode>"),
        Message(role="user", content="go on"),
        Message(role="assistant", content="done"),
    ]
    _, model = asyncio.run(replay_messages(messages))
    sent = [(m["role"], m["content"][0].get("text")) for m in model.calls[-1].messages]
    assert sent[0] == ("system", "You are Codex.")
    assert sent[-2:] == [
        ("user", "<collaboration_mode>Plan</collaboration_mode>"),
        ("user", "go on"),
    ]
    assert prefix_breaks(model) == []


@pytest.mark.parametrize("path", one_run_per_source(), ids=lambda p: p.parent.name)
def test_a_replayed_trajectory_never_changes_bytes_already_sent(path: Path) -> None:
    """The recommended stack with its loop guard replayed through a real agent: no call changes
    what an earlier call sent (the context editor's trigger is not reached on these runs), and
    every call is made (the Codex run's ``wait`` calls on a cell still running are polls, not a
    loop)."""
    skip_unless_here(path)
    trajectory = load_trajectory(path)
    stack = recommended_middleware(loop_guard=True)
    _, model = asyncio.run(replay_messages(trajectory.messages, stack))
    _, plain = asyncio.run(replay_messages(trajectory.messages))
    assert prefix_breaks(model) == []
    assert len(model.calls) == len(plain.calls)
    if "sweagent" in str(path):
        assert stack[0].stats.results_shortened  # the bundled run has long outputs


def test_the_recommended_stack_clears_only_given_a_window() -> None:
    from tokenlean.agentscope import ContextEditorMiddleware, LoopGuardMiddleware
    from tokenlean.context_editor import SAFETY_NET_SHARE

    assert [type(m) for m in recommended_middleware()] == [ToolOutputShorteningMiddleware]
    assert isinstance(recommended_middleware(loop_guard=True)[-1], LoopGuardMiddleware)
    editor = recommended_middleware("openai", context_window=100_000)[1]
    assert isinstance(editor, ContextEditorMiddleware)
    assert editor.settings.trigger_tokens == int(100_000 * SAFETY_NET_SHARE)
    assert editor.settings.mode == "plain"
