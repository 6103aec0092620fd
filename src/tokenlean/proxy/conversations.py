"""Request bodies a client would send, built from recorded trajectories.

Agents that speak the provider APIs re-send their whole history on every request. These builders
turn a neutral transcript (:class:`tokenlean.transcript.Message`, as ``tokenlean.replay`` loads
trajectories) into that sequence of bodies, for tests and benchmarks of the proxy: one body
before each assistant turn, with the cache breakpoint on the newest block as Claude Code puts it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from tokenlean.transcript import Message

EPHEMERAL = {"type": "ephemeral"}


def _anthropic_blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": message.text,
        }
        if message.status == "error":
            result["is_error"] = True
        return [result]
    blocks: list[dict[str, Any]] = []
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.args)}
        )
    return blocks


def anthropic_history(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """(system prompt, Messages API history): tool results become user turns, and consecutive
    turns of one role merge, as the API requires."""
    system = "\n\n".join(m.text for m in messages if m.role == "system")
    history: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _anthropic_blocks(message)
        if not blocks:
            continue
        if history and history[-1]["role"] == role:
            history[-1]["content"].extend(blocks)
        else:
            history.append({"role": role, "content": blocks})
    return system, history


def with_breakpoint(history: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of ``history`` whose newest block alone carries ``cache_control``."""
    copied = [{**m, "content": [dict(b) for b in m["content"]]} for m in history]
    if copied and copied[-1]["content"]:
        copied[-1]["content"][-1]["cache_control"] = dict(EPHEMERAL)
    return copied


def anthropic_requests(
    messages: Sequence[Message], *, model: str = "claude-test", max_tokens: int = 1024
) -> Iterator[dict[str, Any]]:
    """The body sent before each assistant turn of the transcript, oldest first."""
    system, history = anthropic_history(messages)
    for end, message in enumerate(history):
        if message["role"] == "assistant" and end:
            body: dict[str, Any] = {
                "model": model,
                "max_tokens": max_tokens,
                "messages": with_breakpoint(history[:end]),
            }
            if system:
                body["system"] = system
            yield body
