"""Retrieval for agents on another machine: a proxy whose markers name ``read_original`` and a
handle (``retrieval="mcp"``), answered by ``tokenlean mcp`` through the real MCP client over
stdio, with nothing but the originals folder between them."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

import openai
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.data import ERROR, LOG
from tokenlean.proxy import default_rewriter
from tokenlean.store import RETRIEVAL_TOOL, excerpt
from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import ProxyFactory

SCRIPT = "\n".join(f"echo step {i}" for i in range(300))
HISTORY: Any = [
    {"role": "user", "content": "run the tests"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"script": SCRIPT})},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": LOG},
    {"role": "assistant", "content": "one test failed"},
    {"role": "user", "content": "fix it"},
]
_HINT = re.compile(rf'{RETRIEVAL_TOOL}\(\\?"(o\d{{12}})\\?", \\?"(\d+-\d+)\\?"\)')


#: The served tool as an MCP client lists it to the model (``mcp__<server>__<tool>``).
SERVED = {
    "type": "function",
    "function": {
        "name": f"mcp__tokenlean__{RETRIEVAL_TOOL}",
        "description": "Read an original back.",
        "parameters": {"type": "object", "properties": {"handle": {"type": "string"}}},
    },
}


def _sent(
    make_proxy: ProxyFactory, upstream: FakeUpstream, folder: Path, *, served: bool = True
) -> dict[str, Any]:
    """The body the provider got for HISTORY through a proxy keeping originals in ``folder``,
    from a client whose tool list holds the served ``read_original`` (or not)."""
    proxy = make_proxy(default_rewriter(folder, retrieval="mcp"))
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
    tools: Any = [SERVED] if served else openai.NOT_GIVEN
    client.chat.completions.create(model="gpt-test", messages=HISTORY, tools=tools)
    (sent,) = upstream.bodies("/v1/chat/completions")
    return dict(sent)


async def _read(folder: Path, *calls: dict[str, str]) -> list[str]:
    command = [sys.executable, "-m", "tokenlean.cli", "mcp", "--originals", str(folder)]
    server = StdioServerParameters(command=command[0], args=command[1:])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        assert [t.name for t in tools.tools] == [RETRIEVAL_TOOL]
        answers = []
        for arguments in calls:
            result = await session.call_tool(RETRIEVAL_TOOL, arguments)
            answers.append("".join(getattr(part, "text", "") for part in result.content))
        return answers


async def test_markers_name_a_handle_the_mcp_server_reads_back(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
):
    sent = _sent(make_proxy, upstream, tmp_path)
    shortened = sent["messages"][2]["content"]
    arguments = sent["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert str(tmp_path) not in shortened + arguments  # no path: it means nothing elsewhere
    (output, lines), *_ = _HINT.findall(shortened)
    ((script, script_lines),) = _HINT.findall(arguments)
    answers = await _read(
        tmp_path,
        {"handle": output, "lines": lines},
        {"handle": output, "pattern": "FAILED"},
        {"handle": script, "lines": script_lines},
        {"handle": "o000000000000"},
    )
    assert answers[0] == excerpt(LOG, lines=lines)  # the very lines the marker stands for
    assert ERROR in answers[1]
    assert answers[2] == excerpt(SCRIPT, lines=script_lines)  # the cut input, too
    assert answers[3].startswith("No original with handle 'o000000000000'")


def test_a_client_without_the_served_tool_gets_no_marker_naming_it(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
):
    """No ``read_original`` in the request: no way back to name, so the body goes as sent."""
    sent = _sent(make_proxy, upstream, tmp_path, served=False)
    assert sent["messages"] == HISTORY


def test_the_default_still_names_the_file(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
):
    proxy = make_proxy(default_rewriter(tmp_path))
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
    client.chat.completions.create(model="gpt-test", messages=HISTORY)
    (sent,) = upstream.bodies("/v1/chat/completions")
    assert f"full output: {tmp_path}" in sent["messages"][2]["content"]


def test_retrieval_is_checked():
    from tokenlean.raw import RawSettings

    with pytest.raises(ValueError, match="retrieval must be 'file' or 'mcp'"):
        RawSettings(retrieval="ftp")  # type: ignore[arg-type]


def test_an_original_the_sweeps_pruned_reads_as_pruned_not_unknown(tmp_path: Path):
    from tokenlean.mcp import read_original
    from tokenlean.store import FolderOriginalStore, Original, make_handle

    gone = Original(make_handle("o", LOG), LOG)
    FolderOriginalStore(tmp_path).put("", gone)  # kept by a store with room for it
    store = FolderOriginalStore(tmp_path, max_bytes=1)
    os.utime(store.path(gone.handle), (time.time() - 3600, time.time() - 3600))
    store.prune()  # over this store's cap, and unused for an hour

    assert read_original(store, gone.handle).startswith(
        f"The original {gone.handle!r} was pruned from {tmp_path}"
    )
    assert "rerun the command" in read_original(store, gone.handle)
    assert read_original(store, "o000000000000").startswith("No original with handle")
