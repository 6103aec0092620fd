"""ToolOutputShorteningMiddleware inside a real create_agent driven by a scripted model."""

from __future__ import annotations

import ast
import itertools
import logging
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.memory import InMemoryStore

from tests.langchain._agents import coding_agent
from tokenlean.langchain import ToolOutputShorteningMiddleware
from tokenlean.langchain._adapter import to_view
from tokenlean.langchain.store import LangGraphOriginalStore
from tokenlean.shorten import InputShorteningSettings, ShortenSettings
from tokenlean.store import InMemoryOriginalStore, Original
from tokenlean.transcript import canonical, mark_of


def _mark(message: Any) -> Any:
    """The mark output shortening left on a LangChain message (``None`` when it left none)."""
    return mark_of(to_view([message])[0], "output_shortening")


NOISE = [
    f"collected item {i}: module pkg.part_{i % 9} loaded in {i % 7}.{i % 10}s" for i in range(300)
]
LOG = "\n".join(
    [
        "running the suite",
        *NOISE[:150],
        "FAILED tests/test_api.py::test_login - KeyError: 'token'",
        *NOISE[150:],
        "===== 1 failed, 299 passed in 4.20s =====",
    ]
)
HANDLE = re.compile(r'read_original\("(o\d+)", "(\d+)-(\d+)"\)')


def call(name: str, args: dict[str, Any], call_id: str, text: str = "") -> AIMessage:
    return AIMessage(content=text, tool_calls=[{"name": name, "args": args, "id": call_id}])


@tool
def run_tests(target: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Run the test suite."""
    return ToolMessage(
        content=LOG,
        tool_call_id=tool_call_id,
        name="run_tests",
        status="error",
        artifact={"exit": 1},
        additional_kwargs={"k": "v"},
        response_metadata={"took": 4.2},
    )


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return LOG


REPORT = "\n".join(
    [
        f"check {name}_{i} against {kind} rules: {verdict}"
        for i, (name, kind, verdict) in enumerate(
            [
                ("parser", "syntax", "clean"),
                ("lexer", "style", "2 notes"),
                ("planner", "typing", "ok"),
                ("writer", "naming", "clean"),
                ("reader", "imports", "1 note"),
            ]
            * 8
        )
    ]
    + ["ERROR: writer_3 violates naming rules"]
)


@tool
def lint(path: str) -> str:
    """Lint a path."""
    return REPORT


@tool
def lint_strict(path: str) -> str:
    """Lint a path with the strict rules (today the same report)."""
    return REPORT


@tool
def status(job: str) -> str:
    """A job's one-line status."""
    return "job 7: still running"


@tool
def screenshot(tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Take a screenshot."""
    blocks = [{"type": "text", "text": LOG}, {"type": "image", "url": "https://x/y.png"}]
    return ToolMessage(content=blocks, tool_call_id=tool_call_id, name="screenshot")  # type: ignore[arg-type]  # an image block is not a str


def marker(message: BaseMessage) -> re.Match[str]:
    """The first omission marker's read_original call in a tool result."""
    found = HANDLE.search(str(message.content))
    assert found is not None, message.content
    return found


def tool_messages(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


def cfg(thread: str = "t1") -> Any:
    return {"configurable": {"thread_id": thread}}


def test_a_long_result_is_shortened_before_the_model_first_sees_it() -> None:
    middleware = ToolOutputShorteningMiddleware()
    agent, model = coding_agent(
        [call("run_tests", {"target": "tests/test_api.py"}, "c1"), AIMessage(content="done")],
        tools=[run_tests],
        middleware=[middleware],
    )
    state = agent.invoke({"messages": [HumanMessage("run the tests")]}, cfg())
    sent = tool_messages(model.calls[1].messages)[0]
    stored = tool_messages(state["messages"])[0]
    assert sent == stored  # state and request carry the same message
    assert sent.content != LOG and len(str(sent.content)) < len(LOG) // 4
    assert "FAILED tests/test_api.py::test_login - KeyError: 'token'" in str(sent.content)
    assert "===== 1 failed, 299 passed in 4.20s =====" in str(sent.content)
    assert (sent.name, sent.status, sent.artifact, sent.tool_call_id) == (
        "run_tests",
        "error",
        {"exit": 1},
        "c1",
    )
    assert sent.additional_kwargs == {"k": "v"} and sent.response_metadata["took"] == 4.2
    mark = _mark(sent)
    assert (
        mark["shortened"] and mark["kind"] == "log" and mark["tokens_after"] < mark["tokens_before"]
    )
    assert marker(sent).group(1) == mark["handle"]
    assert middleware.store.get("t1", mark["handle"]) == Original(
        mark["handle"], LOG, "run_tests", "c1"
    )
    assert state["messages"][2].id == sent.id
    assert middleware.stats.results_shortened == 1
    offered = [[t["function"]["name"] for t in c.tools] for c in model.calls]
    # a coding agent's long system prompt: the tool is in the request from the first call
    assert ["read_original" in names for names in offered] == [True, True]


def test_later_calls_send_identical_bytes_and_nothing_seen_is_rewritten() -> None:
    agent, model = coding_agent(
        [
            call("run_tests", {"target": "a"}, "c1"),
            AIMessage(content="first"),
            call("run_tests", {"target": "b"}, "c2"),
            AIMessage(content="second"),
        ],
        tools=[run_tests],
        middleware=[ToolOutputShorteningMiddleware()],
    )
    agent.invoke({"messages": [HumanMessage("one")]}, cfg())
    agent.invoke({"messages": [HumanMessage("two")]}, cfg())
    prompts = [[canonical(to_view([m])[0]) for m in c.messages] for c in model.calls]
    for before, after in itertools.pairwise(prompts):
        assert after[: len(before)] == before  # every call extends the previous prompt
    results = tool_messages(model.calls[3].messages)
    assert len(results) == 2 and all(_mark(r)["shortened"] for r in results)


async def test_the_async_path_shortens_the_same_way() -> None:
    responses = [call("run_tests", {"target": "a"}, "c1"), AIMessage(content="done")]
    sync_agent, sync_model = coding_agent(
        responses, tools=[run_tests], middleware=[ToolOutputShorteningMiddleware()]
    )
    async_agent, async_model = coding_agent(
        responses, tools=[run_tests], middleware=[ToolOutputShorteningMiddleware()]
    )
    sync_agent.invoke({"messages": [HumanMessage("go")]}, cfg())
    await async_agent.ainvoke({"messages": [HumanMessage("go")]}, cfg())
    sent = [tool_messages(m.calls[1].messages)[0] for m in (sync_model, async_model)]
    assert sent[0].content == sent[1].content != LOG


@pytest.mark.parametrize(
    ("options", "shortened"),
    [
        ({}, {"run_tests", "read_file"}),
        ({"only": ["read_file"]}, {"read_file"}),
        ({"never": ["read_file"]}, {"run_tests"}),
    ],
)
def test_only_and_never_filters(options: dict[str, Any], shortened: set[str]) -> None:
    both = AIMessage(
        content="",
        tool_calls=[
            {"name": "run_tests", "args": {"target": "x"}, "id": "c1"},
            {"name": "read_file", "args": {"path": "y"}, "id": "c2"},
        ],
    )
    agent, model = coding_agent(
        [both, AIMessage(content="done")],
        tools=[run_tests, read_file],
        middleware=[ToolOutputShorteningMiddleware(**options)],
    )
    agent.invoke({"messages": [HumanMessage("go")]}, cfg())
    results = tool_messages(model.calls[1].messages)
    assert [r.tool_call_id for r in results] == ["c1", "c2"]  # pairing intact
    assert {str(r.name) for r in results if _mark(r) is not None} == shortened


def test_image_results_already_seen_results_and_marked_results_are_left_alone() -> None:
    seen = ToolMessage(content=LOG, tool_call_id="old", name="read_file", id="m-old")
    marked = ToolMessage(
        content=LOG,
        tool_call_id="c0",
        name="read_file",
        id="m-marked",
        response_metadata={"tokenlean": {"output_shortening": {"shortened": True}}},
    )
    history = [
        HumanMessage("hi", id="h1"),
        call("read_file", {"path": "a"}, "old"),
        seen,
        AIMessage(content="ok", id="a1"),
    ]
    agent, model = coding_agent(
        [call("screenshot", {}, "c1"), AIMessage(content="done")],
        tools=[screenshot, read_file],
        middleware=[ToolOutputShorteningMiddleware()],
    )
    agent.invoke({"messages": [*history, HumanMessage("look", id="h2")]}, cfg())
    results = tool_messages(model.calls[1].messages)
    assert results[0].content == LOG and _mark(results[0]) is None
    blocks = results[1].content
    assert isinstance(blocks, list) and isinstance(blocks[0], dict) and blocks[0]["text"] == LOG
    agent2, model2 = coding_agent(
        [AIMessage(content="done")],
        tools=[read_file],
        middleware=[ToolOutputShorteningMiddleware()],
    )
    agent2.invoke(
        {"messages": [HumanMessage("x"), call("read_file", {"path": "a"}, "c0"), marked]}, cfg()
    )
    assert tool_messages(model2.calls[0].messages)[0].content == LOG


def test_text_blocks_are_shortened_as_blocks() -> None:
    @tool
    def blocks(tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
        """Return text blocks."""
        return ToolMessage(content=[{"type": "text", "text": LOG}], tool_call_id=tool_call_id)

    agent, model = coding_agent(
        [call("blocks", {}, "c1"), AIMessage(content="done")],
        tools=[blocks],
        middleware=[ToolOutputShorteningMiddleware()],
    )
    agent.invoke({"messages": [HumanMessage("go")]}, cfg())
    content = tool_messages(model.calls[1].messages)[0].content
    assert isinstance(content, list) and len(content) == 1
    block = content[0]
    assert isinstance(block, dict) and block["type"] == "text" and len(block["text"]) < len(LOG)


def _fetch_omitted(messages: list[BaseMessage]) -> AIMessage:
    match = marker(tool_messages(messages)[-1])
    args = {"handle": match.group(1), "lines": f"{match.group(2)}-{match.group(3)}"}
    return call("read_original", args, "r1")


def test_the_agent_reads_an_original_back_and_only_in_its_own_thread() -> None:
    store = InMemoryOriginalStore()
    agent, model = coding_agent(
        [call("run_tests", {"target": "a"}, "c1"), _fetch_omitted, AIMessage(content="done")],
        tools=[run_tests],
        middleware=[ToolOutputShorteningMiddleware(store=store)],
    )
    agent.invoke({"messages": [HumanMessage("go")]}, cfg("alice"))
    fetched = tool_messages(model.calls[2].messages)[-1]
    lines = LOG.split("\n")
    assert fetched.name == "read_original" and _mark(fetched) is None
    first = int(marker(tool_messages(model.calls[1].messages)[0]).group(2))
    assert f"{first}: {lines[first - 1]}" in str(fetched.content)

    handle = _mark(tool_messages(model.calls[1].messages)[0])["handle"]
    thief, thief_model = coding_agent(
        [call("read_original", {"handle": handle}, "r9"), AIMessage(content="done")],
        tools=[run_tests],
        middleware=[ToolOutputShorteningMiddleware(store=store)],
    )
    thief.invoke({"messages": [HumanMessage("steal")]}, cfg("mallory"))
    assert "No original" in str(tool_messages(thief_model.calls[1].messages)[-1].content)


def test_originals_can_live_in_a_langgraph_store() -> None:
    backing = InMemoryStore()
    middleware = ToolOutputShorteningMiddleware(store=LangGraphOriginalStore(backing))
    agent, model = coding_agent(
        [call("run_tests", {"target": "a"}, "c1"), _fetch_omitted, AIMessage(content="done")],
        tools=[run_tests],
        middleware=[middleware],
    )
    agent.invoke({"messages": [HumanMessage("go")]}, cfg("w1"))
    handle = _mark(tool_messages(model.calls[1].messages)[0])["handle"]
    item = backing.get(("tokenlean", "originals", "w1"), handle)
    assert item is not None and item.value["text"] == LOG
    first = int(marker(tool_messages(model.calls[1].messages)[0]).group(2))
    fetched = str(tool_messages(model.calls[2].messages)[-1].content)
    assert fetched.startswith(f"{first}: {LOG.split(chr(10))[first - 1]}")


def test_shortened_state_persists_through_a_sqlite_checkpointer(tmp_path: Path) -> None:
    path = str(tmp_path / "checkpoints.db")
    with SqliteSaver.from_conn_string(path) as saver:
        agent, first = coding_agent(
            [call("run_tests", {"target": "a"}, "c1"), AIMessage(content="done")],
            tools=[run_tests],
            middleware=[ToolOutputShorteningMiddleware()],
            checkpointer=saver,
        )
        agent.invoke({"messages": [HumanMessage("go")]}, cfg())
    with SqliteSaver.from_conn_string(path) as saver:
        agent, second = coding_agent(
            [AIMessage(content="again")],
            tools=[run_tests],
            middleware=[ToolOutputShorteningMiddleware()],
            checkpointer=saver,
        )
        agent.invoke({"messages": [HumanMessage("more")]}, cfg())
    before = [canonical(to_view([m])[0]) for m in first.calls[1].messages]
    after = [canonical(to_view([m])[0]) for m in second.calls[0].messages]
    assert after[: len(before)] == before
    assert _mark(tool_messages(second.calls[0].messages)[0])["shortened"]


def test_lines_already_shown_are_pointed_to_not_repeated() -> None:
    # Two tools with the same output: not a repeat of one call, so lines are pointed to.
    agent, model = coding_agent(
        [
            call("lint", {"path": "src"}, "c1"),
            call("lint_strict", {"path": "src"}, "c2"),
            AIMessage(content="done"),
        ],
        tools=[lint, lint_strict],
        middleware=[ToolOutputShorteningMiddleware(max_tokens=100_000)],
    )
    agent.invoke({"messages": [HumanMessage("go")]}, cfg())
    first, second = tool_messages(model.calls[2].messages)
    assert first.content == REPORT  # within budget, nothing repeated yet: left alone
    assert "40 lines already shown earlier omitted" in str(second.content)
    assert str(second.content).endswith("ERROR: writer_3 violates naming rules")


SOURCE = [f"def handler_{i}(event):\n    return dispatch(event, route_{i})" for i in range(40)]
FILES = {
    "before": "\n".join(SOURCE),
    "after": "\n".join(["import logging", *SOURCE]),
    # the same functions moved into a class: every line one level deeper
    "nested": "\n".join(
        ["class App:", *("\n".join(f"    {line}" for line in s.split("\n")) for s in SOURCE)]
    ),
}


@tool
def read(version: str) -> str:
    """Read app.py with line numbers (as a coding agent's Read tool shows it)."""
    lines = FILES[version].split("\n")
    return "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(lines, 1))


def test_a_file_read_again_after_an_edit_points_to_the_unchanged_lines() -> None:
    # The edit added a line at the top, so every line's number moved: the unchanged lines are
    # matched by what they hold, and only the new line is shown again.
    agent, model = coding_agent(
        [
            call("read", {"version": "before"}, "c1"),
            call("read", {"version": "after"}, "c2"),
            AIMessage(content="done"),
        ],
        tools=[read],
        middleware=[ToolOutputShorteningMiddleware()],
    )
    agent.invoke({"messages": [HumanMessage("go")]}, cfg())
    first, second = tool_messages(model.calls[2].messages)
    assert "\u2192" + SOURCE[0].split("\n")[0] in str(first.content)  # first read: whole
    lines = str(second.content).split("\n")
    # the new line, then the unchanged stretch: its first and last line (their new numbers
    # say where it now sits) around one pointer to the rest
    assert lines[:2] == ["     1\u2192import logging", "     2\u2192def handler_0(event):"]
    assert "78 lines already shown earlier omitted" in lines[2]
    assert lines[3:] == ["    81\u2192    return dispatch(event, route_39)"]


def test_lines_read_again_at_another_depth_are_shown_again() -> None:
    # Moved under a class, each line holds the same text one level deeper, which changes what
    # it means: a view matches lines with their indentation, so nothing here was shown before.
    agent, model = coding_agent(
        [
            call("read", {"version": "before"}, "c1"),
            call("read", {"version": "nested"}, "c2"),
            AIMessage(content="done"),
        ],
        tools=[read],
        middleware=[ToolOutputShorteningMiddleware()],
    )
    agent.invoke({"messages": [HumanMessage("go")]}, cfg())
    _, second = tool_messages(model.calls[2].messages)
    assert second.content == read.invoke({"version": "nested"})


def _window(lines: list[str]) -> str:
    """A file view as SWE-agent's ``open`` and ``edit`` show it."""
    body = "\n".join(f"{n}:{line}" for n, line in enumerate(lines, 1))
    return f"[File: /repo/app.py ({len(lines)} lines total)]\n{body}"


#: The edit puts line 2 one level too shallow: still valid Python, no longer the same function.
SHALLOW = "return dispatch(event, route_0)"
EDITED = FILES["before"].split("\n")
EDITED[1] = SHALLOW


@tool
def open_file(path: str) -> str:
    """Show a file with line numbers."""
    return _window(FILES["before"].split("\n"))


@tool
def edit(command: str = "", old_string: str = "", new_string: str = "") -> str:
    """Edit the open file by line numbers (``edit A:B``) or by search and replace."""
    return "File updated.\n" + _window(EDITED)


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        ({"command": f"edit 2:2\n{SHALLOW}\nend_of_edit"}, True),
        ({"old_string": "    " + SHALLOW, "new_string": SHALLOW}, False),
    ],
)
def test_an_edit_by_line_numbers_shows_what_it_wrote_in_its_window(
    args: dict[str, str], shown: bool
) -> None:
    # An edit by line numbers is checked in the window it answers with (where its text landed,
    # at what depth), so the lines it wrote are shown there, not pointed to as already shown.
    # A search-and-replace edit's arguments already say what changed and where.
    agent, model = coding_agent(
        [
            call("open_file", {"path": "app.py"}, "c1"),
            call("edit", args, "c2"),
            AIMessage(content="done"),
        ],
        tools=[open_file, edit],
        middleware=[ToolOutputShorteningMiddleware()],
    )
    agent.invoke({"messages": [HumanMessage("go")]}, cfg())
    _, window = tool_messages(model.calls[2].messages)
    assert (f"2:{SHALLOW}" in str(window.content)) is shown
    assert "already shown earlier omitted" in str(window.content)  # the rest points back


def test_a_result_repeating_one_shown_whole_is_a_pointer_to_that_call() -> None:
    store = InMemoryOriginalStore()
    agent, model = coding_agent(
        [
            call("lint", {"path": "src"}, "c1"),
            call("status", {"job": "7"}, "s1"),
            call("lint", {"path": "src"}, "c2"),
            call("status", {"job": "7"}, "s2"),
            call("lint", {"path": "src"}, "c3"),
            AIMessage(content="done"),
        ],
        tools=[lint, status],
        middleware=[ToolOutputShorteningMiddleware(max_tokens=100_000, store=store)],
    )
    agent.invoke({"messages": [HumanMessage("go")]}, cfg())
    results = tool_messages(model.calls[-1].messages)
    first, status_1, second, status_2, third = results
    assert first.content == REPORT  # shown whole the first time
    pointer = "[Same output as the earlier `lint` call c1, word for word; not repeated.]"
    assert second.content == pointer and third.content == pointer  # both name the first
    assert status_1.content == status_2.content == "job 7: still running"  # a pointer is no shorter
    mark = _mark(second)
    assert mark["kind"] == "repeat"
    kept = store.get("t1", mark["handle"])
    assert kept is not None and kept.text == REPORT
    for before, after in itertools.pairwise(model.calls):  # nothing already sent changed
        assert [canonical(to_view([m])[0]) for m in before.messages] == [
            canonical(to_view([m])[0]) for m in after.messages[: len(before.messages)]
        ]


class _BrokenStore(InMemoryOriginalStore):
    def put(self, scope: str, original: Original) -> None:
        raise OSError("disk full")


def test_a_failing_store_never_breaks_the_agent(caplog: pytest.LogCaptureFixture) -> None:
    agent, model = coding_agent(
        [call("run_tests", {"target": "a"}, "c1"), AIMessage(content="done")],
        tools=[run_tests],
        middleware=[ToolOutputShorteningMiddleware(store=_BrokenStore())],
    )
    with caplog.at_level(logging.ERROR, logger="tokenlean.langchain.output_shortening"):
        state = agent.invoke({"messages": [HumanMessage("go")]}, cfg())
    assert tool_messages(model.calls[1].messages)[0].content == LOG
    assert state["messages"][-1].content == "done"
    assert "could not keep originals" in caplog.text


def test_without_a_thread_nothing_is_cut_as_nothing_could_be_read_back() -> None:
    agent, model = coding_agent(
        [call("run_tests", {"target": "a"}, "c1"), AIMessage(content="done")],
        tools=[run_tests],
        middleware=[ToolOutputShorteningMiddleware()],
        checkpointer=False,
    )
    agent.invoke({"messages": [HumanMessage("go")]})
    assert tool_messages(model.calls[1].messages)[0].content == LOG


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"min_tokens": -1}, "min_tokens"),
        ({"min_saving": 1.0}, "min_saving"),
        ({"only": "bash"}, "collections"),
        ({"tool_name": "read original"}, "identifier"),
        ({"max_tokens": 0}, "max_tokens"),
    ],
)
def test_bad_configuration_raises(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ToolOutputShorteningMiddleware(**options)


def test_orphan_results_and_invalid_unicode_pass_through_without_breaking() -> None:
    broken = LOG.replace("collected item 7:", "collected \ud800 item 7:")

    @tool
    def odd(tool_call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
        """Return text with a lone surrogate."""
        return ToolMessage(content=broken, tool_call_id=tool_call_id, name="odd")

    orphan = ToolMessage(content=LOG, tool_call_id="nobody-called-me", name="read_file", id="m-o")
    agent, model = coding_agent(
        [call("odd", {}, "c1"), AIMessage(content="done")],
        tools=[odd],
        middleware=[ToolOutputShorteningMiddleware()],
    )
    agent.invoke({"messages": [HumanMessage("go"), orphan]}, cfg())
    first = tool_messages(model.calls[0].messages)
    assert first[0].content == LOG  # an orphan result is left as it is
    sent = tool_messages(model.calls[1].messages)[-1]
    assert _mark(sent) is not None and "FAILED tests/test_api.py" in str(sent.content)


def _orders_db() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE orders (id INTEGER, city TEXT, total REAL, status TEXT)")
    db.executemany(
        "INSERT INTO orders VALUES (?, ?, ?, ?)",
        [
            (i, ("Lyon", "Nice")[i % 2], i * 2.5, "open" if i % 50 else "refunded")
            for i in range(500)
        ],
    )
    return db


@tool
def sql_db_query(query: str) -> str:
    """Run a SQL query; the rows come back as Python prints them (as LangChain's SQL tool)."""
    return str(_orders_db().execute(query).fetchall())


def test_a_query_result_printed_on_one_line_keeps_whole_rows_and_reads_back_whole() -> None:
    agent, model = coding_agent(
        [
            call("sql_db_query", {"query": "SELECT * FROM orders"}, "q1"),
            lambda messages: call(
                "read_original", {"handle": _mark(tool_messages(messages)[-1])["handle"]}, "r1"
            ),
            AIMessage(content="done"),
        ],
        tools=[sql_db_query],
        middleware=[ToolOutputShorteningMiddleware()],
    )
    agent.invoke({"messages": [HumanMessage("list the refunded orders")]}, cfg())
    seen = str(tool_messages(model.calls[1].messages)[0].content)
    rows = ast.literal_eval(seen)  # what the model first sees is still the printed list
    kept = [row for row in rows if isinstance(row, tuple)]
    assert [row[0] for row in kept[:64]] == list(range(64)) and kept[-1][0] == 499
    assert {(i, ("Lyon", "Nice")[i % 2], i * 2.5, "refunded") for i in range(0, 500, 50)} <= set(
        kept
    )
    assert 'read_original("o' in next(row for row in rows if isinstance(row, str))
    fetched = str(tool_messages(model.calls[2].messages)[-1].content)
    assert (
        "(250, 'Lyon', 625.0, 'refunded')" in fetched and "(251, 'Nice', 627.5, 'open')" in fetched
    )
    assert seen == str(tool_messages(model.calls[2].messages)[0].content)  # sent again as it was


def _module(functions: int) -> list[str]:
    """A Python module: multi-line imports, then handlers with multi-line signatures."""
    lines = ["from collections.abc import (", "    Mapping,", "    Sequence,", ")", "import os"]
    for k in range(functions):
        lines += ["", f"def handler_{k}(", f"    request_{k}: Mapping[str, str],", ") -> str:"]
        lines += [f"    part_{k}_{j} = request_{k}.get('key_{j}', os.sep) * {j}" for j in range(12)]
        lines += [f"    return part_{k}_0"]
    return lines


MODULE = _module(40)


@tool("Read")
def claude_read(file_path: str, offset: int = 0, limit: int = 0) -> str:
    """Read a file as Claude Code's Read tool shows it: each line after its number."""
    first = max(offset, 1)
    last = first + limit - 1 if limit else len(MODULE)
    return "\n".join(f"{n:>6}\u2192{MODULE[n - 1]}" for n in range(first, last + 1))


def read_first_gap(messages: Sequence[BaseMessage]) -> AIMessage:
    """The agent's next turn: read back the lines the first marker of the first result names."""
    found = marker(tool_messages(messages)[0])
    span = f"{found.group(2)}-{found.group(3)}"
    return call("read_original", {"handle": found.group(1), "lines": span}, "r1")


def test_a_whole_file_read_keeps_its_declarations_and_its_gaps_read_back_by_line() -> None:
    agent, model = coding_agent(
        [
            call("Read", {"file_path": "/repo/app/handlers.py"}, "c1"),
            read_first_gap,
            call("Read", {"file_path": "/repo/app/handlers.py", "offset": 1, "limit": 300}, "c2"),
            AIMessage(content="done"),
        ],
        tools=[claude_read],
        # a limit under this file's size (at the default, 12,000 tokens, it is read whole)
        middleware=[ToolOutputShorteningMiddleware(options=ShortenSettings(file_keep_tokens=2000))],
    )
    agent.invoke({"messages": [HumanMessage("which handler reads key_7?")]}, cfg())
    seen = str(tool_messages(model.calls[1].messages)[0].content)
    shown = seen.split("\n")
    whole = claude_read.invoke({"file_path": "/repo/app/handlers.py"}).split("\n")
    assert len(seen) < 0.8 * len("\n".join(whole))
    declarations = [
        line
        for line in whole
        if re.search(r"\u2192(from|    Mapping|    Seq|\)|import|def|    request_)", line)
    ]
    assert len(declarations) == 5 + 40 * 3 and all(line in shown for line in declarations)
    found = marker(tool_messages(model.calls[1].messages)[0])
    first, last = int(found.group(2)), int(found.group(3))
    fetched = str(tool_messages(model.calls[2].messages)[1].content)
    assert all(whole[n - 1] in fetched for n in range(first, last + 1))  # the file's own lines
    ranged = str(tool_messages(model.calls[3].messages)[2].content)
    # a range the agent asked for: nothing cut, only what it was shown already pointed to
    assert re.search(r"\d+ lines omitted", ranged) is None and whole[299] in ranged
    assert seen == str(tool_messages(model.calls[3].messages)[0].content)  # sent again as it was


LEDGER = [f"    total_{n} = ledger.post(account_{n % 7}, amount={n * 13})" for n in range(1, 401)]


@tool("bash")
def swe_agent_shell(command: str) -> str:
    """SWE-agent's shell: ``open path N`` shows the hundred lines of the file around line N;
    ``edit A:B`` echoes the hundred from ten lines above A."""
    words = command.split("\n", 1)[0].split()
    at = int(words[-1]) if words[0] == "open" else int(words[1].split(":")[0]) + 40
    first = max(1, at - 50)
    body = [f"{n}:{LEDGER[n - 1]}" for n in range(first, first + 100)]
    head = ["[File: /repo/ledger.py (400 lines total)]", f"({first - 1} more lines above)"]
    return "\n".join([*head, *body, f"({400 - first - 99} more lines below)", "bash-$"])


def test_a_window_opened_at_a_line_keeps_its_surroundings_and_reads_back_the_rest() -> None:
    agent, model = coding_agent(
        [
            call("bash", {"command": "open ledger.py 250"}, "c1"),
            read_first_gap,
            AIMessage(content="done"),
        ],
        tools=[swe_agent_shell],
        middleware=[ToolOutputShorteningMiddleware()],
    )
    agent.invoke({"messages": [HumanMessage("where is account 3 posted?")]}, cfg())
    seen = str(tool_messages(model.calls[1].messages)[0].content)
    numbers = [int(n) for n in re.findall(r"^(\d+):", seen, re.MULTILINE)]
    assert numbers == list(range(230, 271))  # line 250 and 20 lines on each side
    assert seen.startswith("[File: /repo/ledger.py (400 lines total)]\n(199 more lines above)")
    found = marker(tool_messages(model.calls[1].messages)[0])
    fetched = str(tool_messages(model.calls[2].messages)[1].content)
    first, last = int(found.group(2)), int(found.group(3))
    assert [f"{n}:{LEDGER[n - 1]}" in fetched for n in (200, 229)] == [True, True]
    assert last - first + 1 == 30 and f"230:{LEDGER[229]}" not in fetched
    assert seen == str(tool_messages(model.calls[2].messages)[0].content)  # sent again as it was


def test_an_edit_echo_is_placed_by_all_the_edit_wrote_though_its_input_is_cut() -> None:
    wrote = "\n".join(LEDGER[109:189])  # lines 110-189, long enough to be cut once it ran
    agent, model = coding_agent(
        [
            # (an id: the turn it was made in is cut once it ran, as a checkpointed one is)
            call("bash", {"command": f"edit 110:189\n{wrote}\nend_of_edit"}, "c1").model_copy(
                update={"id": "turn-1"}
            ),
            AIMessage(content="done"),
        ],
        tools=[swe_agent_shell],
        middleware=[
            ToolOutputShorteningMiddleware(inputs=InputShorteningSettings(), offer_tool="always")
        ],
    )
    agent.invoke({"messages": [HumanMessage("post every entry again")]}, cfg())
    sent = model.calls[1].messages
    turn = next(m for m in sent if isinstance(m, AIMessage) and m.tool_calls)
    assert "64 lines of this input omitted" in turn.tool_calls[0]["args"]["command"]  # as cut
    echo = str(tool_messages(sent)[0].content)
    numbers = [int(n) for n in re.findall(r"^(\d+):", echo, re.MULTILINE)]
    assert numbers == list(range(100, 200))  # every line within 20 of what the edit wrote


SMALL_LOG = "\n".join(
    [*(f"PASSED tests/test_mod_{i}.py::test_case_{i}" for i in range(80)), "FAILED t.py"]
)


@tool
def quick_tests(target: str) -> str:
    """Run the quick tests."""
    return SMALL_LOG


@pytest.mark.parametrize(
    ("brief", "cut"), [("run them", False), ("the task: " + "x y " * 900, True)]
)
def test_a_cut_under_the_minimum_cacheable_prompt_counts_the_history_ahead(
    brief: str, cut: bool
) -> None:
    """Under OpenAI's prices a prompt under 1,024 tokens is cached by nobody: a ~1,300-token cut
    that may leave the prompt that short is not made, unless the history ahead of the turn
    keeps the prompt over the minimum whatever the cut."""
    agent, model = coding_agent(
        [call("quick_tests", {"target": "all"}, "c1"), AIMessage(content="done")],
        tools=[quick_tests],
        middleware=[ToolOutputShorteningMiddleware(pricing="openai")],
    )
    agent.invoke({"messages": [HumanMessage(brief)]}, cfg())
    sent = tool_messages(model.calls[1].messages)[0]
    assert (sent.content != SMALL_LOG) is cut
