"""tokenlean's history processor driving a real pydantic-ai ``Agent`` through ``FunctionModel``.

The scripted model records exactly what it is sent on each call, as pydantic-ai would send it
(each message dumped by ``ModelMessagesTypeAdapter`` at that moment), so the tests assert what
the model saw: a long log shortened before its first sight, every later call starting with the
earlier call's messages byte for byte, originals read back through the tool or the file.
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "pydantic_ai", reason="needs the pydantic-ai extra (pip install tokenlean[pydantic-ai])"
)

from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import (
    BinaryContent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.data import ERROR, LOG, SCRIPT, one_run_per_source, skip_unless_here
from tokenlean.pydantic_ai import history_processor
from tokenlean.raw import RawSettings
from tokenlean.replay._formats import load_trajectory
from tokenlean.store import FolderOriginalStore, InMemoryOriginalStore, Original
from tokenlean.testing.pydantic_ai import AT, to_pydantic
from tokenlean.testing.pydantic_ai import make_agent as wire
from tokenlean.transcript import Message

#: The tests of what the tool reads and what the processor writes offer the tool to every run;
#: which runs are offered it by default is tested on its own (``test_a_run_*``).
OFFERED = RawSettings(offer_tool="always")
HANDLE = re.compile(r'read_original\("([a-z]\d{12})"')

Reply = Callable[[int, list[ModelMessage]], ModelResponse]


class Scripted:
    """A ``FunctionModel`` function (:meth:`respond`) that answers from ``reply`` and records
    every call."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.calls: list[list[ModelMessage]] = []
        self.sent: list[list[bytes]] = []  # each message's bytes when it was sent
        self.tools: list[list[str]] = []  # the names of the tools each call lists

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.calls.append(copy.deepcopy(messages))
        self.tools.append([t.name for t in info.function_tools])
        self.sent.append([ModelMessagesTypeAdapter.dump_json([m]) for m in messages])
        return self.reply(len(self.calls), messages)


def make_agent(
    scripted: Scripted, shortener: Any, tools: Sequence[Any] = (), *, system_prompt: str = ""
) -> Agent[None, str]:
    """A real agent with the processor wired the way the installed pydantic-ai takes it."""
    return wire(FunctionModel(scripted.respond), shortener, tools, system_prompt=system_prompt)


def run_tests(path: str) -> str:
    """Run the test suite at ``path``."""
    return LOG


def call(name: str, args: dict[str, Any] | str, call_id: str) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=call_id)])


def tool_returns(messages: Sequence[ModelMessage]) -> list[ToolReturnPart[Any]]:
    return [
        p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]


def assert_prefixes_kept(sent: list[list[bytes]]) -> None:
    """Every call starts with the messages of the call before it, byte for byte."""
    for before, after in itertools.pairwise(sent):
        assert after[: len(before)] == before


# -- a real agent ---------------------------------------------------------------------------


def test_a_long_log_is_shortened_before_the_model_first_sees_it() -> None:
    def reply(n: int, messages: list[ModelMessage]) -> ModelResponse:
        if n == 1:
            return call("run_tests", {"path": "tests"}, "c1")
        return ModelResponse(parts=[TextPart("The refund test fails with a 500.")])

    scripted = Scripted(reply)
    agent = make_agent(scripted, history_processor(settings=OFFERED), [run_tests])
    result = agent.run_sync("Run the tests and tell me what fails.")
    assert result.output == "The refund test fails with a 500."
    (seen,) = tool_returns(scripted.calls[1])
    assert isinstance(seen.content, str)
    assert ERROR in seen.content
    assert len(seen.content) < len(LOG) / 5
    assert HANDLE.search(seen.content)
    assert seen.tool_call_id == "c1" and seen.tool_name == "run_tests"
    assert seen.metadata["tokenlean"]["output_shortening"]["shortened"] is True


def _log_run(system_prompt: str) -> Scripted:
    def reply(n: int, messages: list[ModelMessage]) -> ModelResponse:
        if n <= 2:
            return call("run_tests", {"path": f"tests/{n}"}, f"c{n}")
        return ModelResponse(parts=[TextPart("done")])

    scripted = Scripted(reply)
    agent = make_agent(scripted, history_processor(), [run_tests], system_prompt=system_prompt)
    agent.run_sync("Run the tests twice.")
    return scripted


def test_a_run_whose_first_prompt_is_short_is_never_offered_the_tool() -> None:
    # its schema, sent on every call, would cost more than its cuts save: no call lists it,
    # and no marker names it (the log is cut only where nothing needs reading back)
    scripted = _log_run("")
    assert len(scripted.tools) == 3
    assert all(names == ["run_tests"] for names in scripted.tools)
    assert all("read_original" not in str(p.content) for p in tool_returns(scripted.calls[-1]))
    assert_prefixes_kept(scripted.sent)


def test_a_run_whose_first_prompt_is_long_is_offered_the_tool_from_its_first_call() -> None:
    scripted = _log_run("Follow the repository's conventions and keep changes small. " * 2000)
    assert all(names == ["run_tests", "read_original"] for names in scripted.tools)
    first = tool_returns(scripted.calls[-1])[0]
    assert HANDLE.search(str(first.content)) and ERROR in str(first.content)
    assert_prefixes_kept(scripted.sent)


def test_later_calls_receive_earlier_messages_byte_identical() -> None:
    def reply(n: int, messages: list[ModelMessage]) -> ModelResponse:
        if n <= 3:
            return call("run_tests", {"path": f"tests/{n}"}, f"c{n}")
        if n == 4:
            return call("bash", {"command": SCRIPT}, "c4")
        return ModelResponse(parts=[TextPart("done")])

    def bash(command: str) -> str:
        """Run a shell command."""
        return "ok\n" * 3

    scripted = Scripted(reply)
    make_agent(scripted, history_processor(settings=OFFERED), [run_tests, bash]).run_sync("go")
    assert len(scripted.sent) == 5
    assert_prefixes_kept(scripted.sent)
    # the script was cut once its call had run, before the model was sent it back
    (turn,) = [m for m in scripted.calls[4] if isinstance(m, ModelResponse) and _calls(m, "c4")]
    args = _calls(turn, "c4")[0].args_as_dict()
    assert "omitted after the call ran" in args["command"] and len(args["command"]) < len(SCRIPT)


def _calls(response: ModelResponse, call_id: str) -> list[ToolCallPart[Any]]:
    return [p for p in response.parts if isinstance(p, ToolCallPart) and p.tool_call_id == call_id]


def test_the_original_is_read_back_through_the_tool() -> None:
    answers: list[str] = []

    def reply(n: int, messages: list[ModelMessage]) -> ModelResponse:
        if n == 1:
            return call("run_tests", {"path": "tests"}, "c1")
        if n == 2:
            (seen,) = tool_returns(messages)
            match = HANDLE.search(str(seen.content))
            assert match is not None
            return call("read_original", {"handle": match[1], "lines": "195-205"}, "c2")
        answers.append(str(tool_returns(messages)[-1].content))
        return ModelResponse(parts=[TextPart("done")])

    scripted = Scripted(reply)
    make_agent(scripted, history_processor(settings=OFFERED), [run_tests]).run_sync("go")
    assert "tests/test_api.py::test_case_196 PASSED" in answers[0]
    assert ERROR in answers[0]
    assert_prefixes_kept(scripted.sent)


def test_an_original_the_store_dropped_reads_as_dropped_not_unknown() -> None:
    answers: list[str] = []

    def reply(n: int, messages: list[ModelMessage]) -> ModelResponse:
        if n == 1:
            return call("run_tests", {"path": "tests"}, "c1")
        if n == 2:
            match = HANDLE.search(str(tool_returns(messages)[0].content))
            assert match is not None
            return call("read_original", {"handle": match[1]}, "c2")
        answers.append(str(tool_returns(messages)[-1].content))
        return ModelResponse(parts=[TextPart("done")])

    small = InMemoryOriginalStore(max_bytes_per_thread=100, max_bytes=100)  # LOG does not fit
    make_agent(
        Scripted(reply), history_processor(settings=OFFERED, store=small), [run_tests]
    ).run_sync("go")

    assert "was dropped to bound the store's size" in answers[0]
    assert "rerun the command" in answers[0]


def test_the_original_is_read_back_from_a_file(tmp_path: Path) -> None:
    def reply(n: int, messages: list[ModelMessage]) -> ModelResponse:
        if n == 1:
            return call("run_tests", {"path": "tests"}, "c1")
        return ModelResponse(parts=[TextPart("done")])

    scripted = Scripted(reply)
    shortener = history_processor(read_back="file", store=FolderOriginalStore(tmp_path))
    assert shortener.tool is None
    make_agent(scripted, shortener, [run_tests]).run_sync("go")
    (seen,) = tool_returns(scripted.calls[1])
    match = re.search(r"full output: (\S+\.txt) lines (\d+)-(\d+)", str(seen.content))
    assert match is not None and Path(match[1]).parent == tmp_path
    lines = Path(match[1]).read_text(encoding="utf-8").split("\n")
    assert lines == LOG.split("\n")


def test_short_outputs_images_and_unknown_parts_pass_through() -> None:
    image = BinaryContent(data=b"\x89PNG\r\n", media_type="image/png")

    def reply(n: int, messages: list[ModelMessage]) -> ModelResponse:
        if n == 1:
            return ModelResponse(
                parts=[ThinkingPart("let me look", signature="sig"), *call("short", {}, "c1").parts]
            )
        if n == 2:
            return call("flaky", {}, "c2")
        return ModelResponse(parts=[TextPart("done")])

    def short() -> str:
        """A short answer."""
        return "3 files changed"

    def flaky() -> str:
        """Fails once."""
        raise ModelRetry("try again later")

    scripted = Scripted(reply)
    agent = make_agent(scripted, history_processor(settings=OFFERED), [short, flaky])
    bare = Scripted(reply)
    Agent(
        FunctionModel(bare.respond), tools=[short, flaky, history_processor(settings=OFFERED).tool]
    ).run_sync(["What is in this image?", image])
    agent.run_sync(["What is in this image?", image])
    assert [_wire(c) for c in scripted.calls] == [_wire(c) for c in bare.calls]
    parts = [p for m in scripted.calls[-1] for p in m.parts]
    assert {"thinking", "tool-return", "user-prompt"} <= {p.part_kind for p in parts}
    # a retry is a RetryPromptPart in pydantic-ai 1.x, a "retried" tool return in 2.x
    assert any(
        isinstance(p, RetryPromptPart) or getattr(p, "outcome", "") == "retried" for p in parts
    )


@pytest.mark.filterwarnings("ignore:`RetryPromptPart` is deprecated")  # 2.x; a 1.x history has it
def test_parts_the_view_does_not_show_are_the_same_objects() -> None:
    retry = RetryPromptPart("bad arguments", tool_name="bash", tool_call_id="c0", timestamp=AT)
    thinking = ThinkingPart("hmm", signature="s")
    history = [
        *_history(LOG)[:2],
        ModelRequest(parts=[retry]),
        ModelResponse(parts=[thinking, ToolCallPart("bash", {"command": "ls"}, tool_call_id="c2")]),
        ModelRequest(parts=[ToolReturnPart("bash", LOG, tool_call_id="c2", timestamp=AT)]),
    ]
    out = history_processor(settings=OFFERED)(history)
    assert out[:4] == history[:4] and all(a is b for a, b in zip(out[:4], history[:4], strict=True))
    assert out[4].parts[0].content != LOG


def _wire(messages: Sequence[ModelMessage]) -> list[Any]:
    """What a provider reads of each part (timestamps and run ids differ between runs)."""
    return [
        [
            (p.part_kind, repr(getattr(p, "content", None)), getattr(p, "args", None))
            for p in m.parts
        ]
        for m in messages
    ]


def test_a_broken_store_leaves_the_history_unchanged(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(InMemoryOriginalStore):
        def put(self, scope: str, original: Original) -> None:
            raise OSError("disk full")

    def reply(n: int, messages: list[ModelMessage]) -> ModelResponse:
        if n == 1:
            return call("run_tests", {"path": "tests"}, "c1")
        return ModelResponse(parts=[TextPart("done")])

    scripted = Scripted(reply)
    with caplog.at_level(logging.ERROR, logger="tokenlean.pydantic_ai"):
        result = make_agent(
            scripted, history_processor(settings=OFFERED, store=Broken()), [run_tests]
        ).run_sync("go")
    assert result.output == "done"
    assert tool_returns(scripted.calls[1])[0].content == LOG
    assert "could not shorten" in caplog.text


def test_a_planner_error_leaves_the_history_unchanged(caplog: pytest.LogCaptureFixture) -> None:
    shortener = history_processor(settings=OFFERED)

    def broken(view: Sequence[Message]) -> Any:
        raise RuntimeError("planner bug")

    shortener.kept.planner.plan = broken  # type: ignore[method-assign]
    history = _history(LOG)
    with caplog.at_level(logging.ERROR, logger="tokenlean.pydantic_ai"):
        assert shortener(history) is history
    assert "planner bug" in caplog.text


# -- the processor on its own ----------------------------------------------------------------


def _history(output: str, args: dict[str, Any] | str | None = None) -> list[ModelMessage]:
    return [
        ModelRequest(
            parts=[
                SystemPromptPart("You fix bugs.", timestamp=AT),
                UserPromptPart("go", timestamp=AT),
            ]
        ),
        ModelResponse(
            parts=[
                TextPart("Running the tests.", id="t1"),
                ToolCallPart(
                    "bash",
                    args if args is not None else {"command": "pytest"},
                    tool_call_id="c1",
                    id="x1",
                    provider_details={"k": 1},
                ),
            ],
            model_name="scripted",
            timestamp=AT,
        ),
        ModelRequest(
            parts=[
                ToolReturnPart(
                    "bash", output, tool_call_id="c1", timestamp=AT, metadata={"mine": 1}
                )
            ]
        ),
    ]


def test_the_input_is_never_mutated_and_other_fields_survive() -> None:
    history = _history(LOG)
    before = ModelMessagesTypeAdapter.dump_json(history)
    out = history_processor(settings=OFFERED)(history)
    assert ModelMessagesTypeAdapter.dump_json(history) == before
    assert out[0] is history[0] and out[1] is history[1]
    part = out[2].parts[0]
    old = history[2].parts[0]
    assert isinstance(part, ToolReturnPart) and isinstance(old, ToolReturnPart)
    assert part.content != old.content
    assert (part.tool_call_id, part.tool_name, part.timestamp) == ("c1", "bash", AT)
    assert part.metadata["mine"] == 1 and "tokenlean" in part.metadata


@pytest.mark.parametrize("form", ["dict", "json"])
def test_cut_arguments_keep_their_form_and_fields(form: str) -> None:
    args: dict[str, Any] | str = {"command": SCRIPT}
    if form == "json":
        args = json.dumps(args)
    out = history_processor(settings=OFFERED)(_history("ok", args))
    response = out[1]
    assert isinstance(response, ModelResponse)
    text, cut = response.parts
    assert text is _history("ok")[1].parts[0] or text == _history("ok")[1].parts[0]
    assert isinstance(cut, ToolCallPart)
    assert isinstance(cut.args, dict if form == "dict" else str)
    assert "omitted after the call ran" in cut.args_as_dict()["command"]
    assert (cut.tool_call_id, cut.id, cut.provider_details) == ("c1", "x1", {"k": 1})
    assert (response.model_name, response.timestamp) == ("scripted", AT)


def test_the_same_history_gives_the_same_bytes_in_any_process() -> None:
    history = _history(LOG)
    once = history_processor(settings=OFFERED)(history)
    dumped = ModelMessagesTypeAdapter.dump_json(once)
    assert (
        ModelMessagesTypeAdapter.dump_json(history_processor(settings=OFFERED)(history)) == dumped
    )
    # what pydantic-ai keeps and sends back (here through a database) is left as it is
    stored = ModelMessagesTypeAdapter.validate_json(dumped)
    assert ModelMessagesTypeAdapter.dump_json(history_processor(settings=OFFERED)(stored)) == dumped


def test_settings_are_the_raw_rewrites_and_are_checked() -> None:
    assert (
        history_processor(settings=RawSettings(min_tokens=10**6))(_history(LOG))[2].parts[0].content
        == LOG
    )
    with pytest.raises(ValueError, match="read_back"):
        history_processor(read_back="mcp")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="FolderOriginalStore"):
        history_processor(read_back="file", store=InMemoryOriginalStore())
    with pytest.raises(ValueError, match="RawSettings"):
        history_processor(settings={"min_tokens": 1})  # type: ignore[arg-type]


# -- a replay of real trajectories -------------------------------------------------------------


@pytest.mark.parametrize("path", one_run_per_source(), ids=lambda p: p.parent.name)
def test_a_replayed_trajectory_never_breaks_the_prefix(path: Path) -> None:
    skip_unless_here(path)
    messages = to_pydantic(load_trajectory(path).messages)
    shortener, cold = history_processor(), history_processor()
    kept: list[ModelMessage] = []
    before: list[bytes] = []
    shortened = 0
    for k in [i for i, m in enumerate(messages) if isinstance(m, ModelResponse)] + [len(messages)]:
        # pydantic-ai keeps what the processor returned and appends the new messages to it
        sent = shortener([*kept, *messages[len(kept) : k]])
        now = [ModelMessagesTypeAdapter.dump_json([m]) for m in sent]
        assert now[: len(before)] == before
        # a cold process given the history as recorded sends the same bytes
        assert [ModelMessagesTypeAdapter.dump_json([m]) for m in cold(messages[:k])] == now
        cold.kept.forget()
        shortened = sum(1 for p in tool_returns(sent) if p.metadata)
        kept, before = sent, now
    if "sweagent" in str(path):
        assert shortened  # the bundled run has long outputs: the replay exercised the planner
