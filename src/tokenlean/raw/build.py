"""Raw request bodies built from a neutral transcript, as a client of each API would send them.

Replays and tests use these to turn recorded runs into the requests an agent speaking the
provider API directly would have made: :func:`body` for one request, :func:`call_points` for
where in a run the model was called, :func:`mark_newest` for the cache breakpoint a client
moves to the newest block on every request. Every content is a list of blocks (as such clients
send it), so moving the breakpoint changes nothing but the ``cache_control`` key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tokenlean.raw import Api
from tokenlean.transcript import Message

CACHE_CONTROL: Mapping[str, str] = {"type": "ephemeral"}


def call_points(messages: Sequence[Message]) -> list[int]:
    """For each assistant turn, how many messages came before it (the model saw those)."""
    return [i for i, m in enumerate(messages) if m.role == "assistant"]


def body(api: Api, messages: Sequence[Message], *, model: str = "model") -> dict[str, Any]:
    """One request for ``api`` carrying ``messages`` (a leading system message becomes the
    system prompt or instructions)."""
    system = messages[0].text if messages and messages[0].role == "system" else None
    rest = messages[1:] if system is not None else messages
    if api == "anthropic":
        out: dict[str, Any] = {"model": model, "max_tokens": 1024, "messages": _anthropic(rest)}
        if system is not None:
            out["system"] = [{"type": "text", "text": system}]
        return out
    if api == "openai_chat":
        head = [{"role": "system", "content": system}] if system is not None else []
        return {"model": model, "messages": head + [_chat(m) for m in rest]}
    out = {"model": model, "input": [item for m in rest for item in _responses(m)]}
    if system is not None:
        out["instructions"] = system
    return out


def mark_newest(api: Api, request: Mapping[str, Any]) -> dict[str, Any]:
    """``request`` with an Anthropic cache breakpoint on its newest block (other APIs: as is)."""
    if api != "anthropic" or not request.get("messages"):
        return dict(request)
    messages = list(request["messages"])
    last = dict(messages[-1])
    blocks = list(last["content"])
    blocks[-1] = {**blocks[-1], "cache_control": dict(CACHE_CONTROL)}
    last["content"] = blocks
    messages[-1] = last
    return {**request, "messages": messages}


def strip_cache_control(value: Any) -> Any:
    """``value`` (a body or part of one) without any ``cache_control`` key, for comparisons."""
    if isinstance(value, Mapping):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value


def _anthropic(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if message.text:
                blocks.append({"type": "text", "text": message.text})
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.args)}
                for c in message.tool_calls
            ]
            out.append({"role": "assistant", "content": blocks or [{"type": "text", "text": ""}]})
            continue
        if message.role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": message.text,
            }
            if message.status == "error":
                block["is_error"] = True
        else:
            block = {"type": "text", "text": message.text}
        if out and out[-1]["role"] == "user" and _ends_with_result(out[-1]):
            out[-1]["content"].append(block)  # results and what follows share one user turn
        else:
            out.append({"role": "user", "content": [block]})
    return out


def _ends_with_result(message: Mapping[str, Any]) -> bool:
    return bool(message["content"]) and message["content"][-1].get("type") == "tool_result"


def _chat(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.text}
    if message.role != "assistant":
        return {"role": message.role, "content": message.text}
    out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(dict(c.args))},
            }
            for c in message.tool_calls
        ]
    return out


def _responses(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        call_id = message.tool_call_id or ""
        return [{"type": "function_call_output", "call_id": call_id, "output": message.text}]
    if message.role != "assistant":
        said = {"type": "input_text", "text": message.text}
        return [{"type": "message", "role": message.role, "content": [said]}]
    items: list[dict[str, Any]] = []
    if message.text:
        part: dict[str, Any] = {"type": "output_text", "text": message.text, "annotations": []}
        items.append({"type": "message", "role": "assistant", "content": [part]})
    items += [
        {
            "type": "function_call",
            "call_id": c.id,
            "name": c.name,
            "arguments": json.dumps(dict(c.args)),
        }
        for c in message.tool_calls
    ]
    return items
