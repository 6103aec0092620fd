"""The README recipe for the Claude Agent SDK: it runs Claude Code, so ``ANTHROPIC_BASE_URL`` in
its ``env`` option sends every request through ``tokenlean proxy``.

A real ``claude_agent_sdk.query`` drives the real Claude Code CLI (the one ``.ci/run`` pins,
``TOKENLEAN_CLAUDE``) through the proxy to the scripted fake Anthropic model of the Claude Code
end-to-end test, which asks for two Bash commands and then answers; the test reads what the
client sent and what the proxy forwarded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

sdk = pytest.importorskip("claude_agent_sdk", reason="the recipe needs claude-agent-sdk")

from tests.proxy.test_proxy_claude_code import (  # noqa: E402
    CLAUDE,
    FINAL,
    NEEDLE,
    PROMPT,
    _text,
    _tool_results,
    through_proxy,
)

pytestmark = pytest.mark.skipif(
    CLAUDE is None or not Path(CLAUDE).exists(),
    reason="Claude Code not installed (npm install --prefix DIR @anthropic-ai/claude-code, "
    "then TOKENLEAN_CLAUDE=DIR/node_modules/.bin/claude)",
)


async def _ask(cwd: Path, env: Mapping[str, str]) -> list[Any]:
    options = sdk.ClaudeAgentOptions(
        cli_path=CLAUDE, cwd=str(cwd), env=dict(env), allowed_tools=["Bash"]
    )
    return [message async for message in sdk.query(prompt=PROMPT, options=options)]


def test_the_agent_sdk_runs_through_the_proxy_and_its_results_are_shortened(
    tmp_path: Path,
) -> None:
    messages, client_bodies, upstream = through_proxy(
        tmp_path, lambda env: asyncio.run(_ask(tmp_path / "work", env))
    )
    answer = [m for m in messages if isinstance(m, sdk.ResultMessage)]
    assert answer and FINAL in (answer[-1].result or "")
    sent = [r.json() for r in upstream if r.path == "/v1/messages"]
    pairs = [
        (c, u)
        for c, u in zip(client_bodies, sent, strict=True)
        if any(t.get("name") == "Bash" for t in c.get("tools", []))
    ]
    client, forwarded = pairs[-1]
    before = _text(_tool_results(client)[0])
    after = _text(_tool_results(forwarded)[0])
    assert NEEDLE in before and NEEDLE in after  # the line that matters survives
    assert len(after) < len(before) / 2
    assert str(tmp_path / "originals") in after  # the marker names the file to read
