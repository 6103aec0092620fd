"""One phase of the restart test, run in its own process (``python -m tests.langchain.restart_agent
PHASE FOLDER``): the agent checkpoints to ``FOLDER/checkpoints.db`` and has the store
``FOLDER/store.db``; no tokenlean store is given, so originals go to the agent's store.

``first``: a tool returns a long log, which the output shortener cuts; prints the handle its
marker names. ``second``: a new process loads the same thread and the model asks
``read_original`` for the lines the marker says were omitted; prints that tool's answer and the
lines it should hold. Each phase also prints, per model call, whether every request whose
messages name ``read_original`` listed it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.sqlite import SqliteStore

from tests.langchain._agents import coding_agent
from tokenlean.langchain import ToolOutputShorteningMiddleware

LOG = "\n".join(
    [
        *(f"worker-{i % 5} step {i}: copied block {i * 7} in {i % 13} ms" for i in range(400)),
        "ERROR: checksum mismatch in block 2107 (expected 9f31, got 77c0)",
        *(f"worker-{i % 5} step {i}: verified block {i * 7}" for i in range(400, 600)),
    ]
)
MARKER = re.compile(r'read_original\("(o\d+)", "(\d+)-(\d+)"\)')
THREAD = {"configurable": {"thread_id": "restart"}}


@tool
def copy_blocks(target: str) -> str:
    """Copy blocks to a target and report each one."""
    return LOG


def _marker(messages: list[BaseMessage]) -> re.Match[str]:
    for message in messages:
        if isinstance(message, ToolMessage) and message.name == "copy_blocks":
            found = MARKER.search(str(message.content))
            if found:
                return found
    raise SystemExit("no omission marker in the restored conversation")


def _ask_for_omitted(messages: list[BaseMessage]) -> AIMessage:
    found = _marker(messages)
    args = {"handle": found.group(1), "lines": f"{found.group(2)}-{found.group(3)}"}
    return AIMessage("", tool_calls=[{"name": "read_original", "args": args, "id": "r1"}])


def run(phase: str, folder: Path) -> dict[str, Any]:
    with (
        SqliteSaver.from_conn_string(str(folder / "checkpoints.db")) as saver,
        SqliteStore.from_conn_string(str(folder / "store.db")) as store,
    ):
        store.setup()
        if phase == "first":
            call = {"name": "copy_blocks", "args": {"target": "/backup"}, "id": "c1"}
            responses: list[Any] = [AIMessage("", tool_calls=[call]), AIMessage("copied")]
        else:
            responses = [_ask_for_omitted, AIMessage("found it")]
        agent, model = coding_agent(
            responses,
            tools=[copy_blocks],
            middleware=[ToolOutputShorteningMiddleware()],
            checkpointer=saver,
            store=store,
        )
        agent.invoke({"messages": [HumanMessage(f"{phase} run")]}, THREAD)
        messages = model.calls[-1].messages
        found = _marker(messages)
        # per call: whether a marker in its messages names read_original, and whether its
        # tool list holds the tool (a marker names only a way back the request has)
        follows = [
            (MARKER.search(str([str(m.content) for m in c.messages])) is not None)
            <= ("read_original" in [t["function"]["name"] for t in c.tools])
            for c in model.calls
        ]
        if phase == "first":
            return {"handle": found.group(1), "follows": follows}
        first, last = int(found.group(2)), int(found.group(3))
        answer = [m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == "r1"]
        return {
            "follows": follows,
            "handle": found.group(1),
            "answer": str(answer[-1].content),
            "expected": [f"{n}: {LOG.split(chr(10))[n - 1]}" for n in range(first, last + 1)],
        }


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], Path(sys.argv[2]))))
