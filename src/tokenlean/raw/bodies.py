"""Raw request bodies built from a neutral transcript, as a client of each API would send them.

Tests, replays and benchmarks use these to turn recorded runs (lists of
:class:`~tokenlean.transcript.Message`, as ``tokenlean.replay`` loads them) into the requests an
agent speaking the provider API directly would have made. Core only: no extra is needed.

- :func:`body` for one request of any API, :func:`call_points` for where in a run the model was
  called, :func:`mark_newest` for the cache breakpoint a client moves to the newest block on
  every request. Every content is a list of blocks (as such clients send it), so moving the
  breakpoint changes nothing but the ``cache_control`` key; :func:`strip_cache_control` takes it
  away again for comparisons.
- :func:`anthropic_requests` for the whole sequence of Anthropic bodies of a run in the shape
  Claude Code sends: one before each assistant turn, the system prompt as one string, turns of
  one role merged, the breakpoint on the newest block (the proxy's tests and benchmarks).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tokenlean.raw import Api, strip_cache_control
from tokenlean.transcript import Message

__all__ = [
    "CACHE_CONTROL",
    "anthropic_requests",
    "body",
    "call_points",
    "mark_newest",
    "strip_cache_control",
]

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
    if api == "gemini":  # the model is named in the URL, not the body
        out = {"contents": _gemini(rest)}
        if system is not None:
            out["systemInstruction"] = {"parts": [{"text": system}]}
        return out
    out = {"model": model, "input": [item for m in rest for item in _responses(m)]}
    if system is not None:
        out["instructions"] = system
    return out


def mark_newest(api: Api, request: Mapping[str, Any]) -> dict[str, Any]:
    """``request`` with an Anthropic cache breakpoint on its newest block (other APIs: as is)."""
    if api != "anthropic" or not request.get("messages"):
        return dict(request)
    messages = list(request["messages"])
    messages[-1] = _with_breakpoint(messages[-1])
    return {**request, "messages": messages}


def anthropic_requests(
    messages: Sequence[Message], *, model: str = "claude-test", max_tokens: int = 1024
) -> Iterator[dict[str, Any]]:
    """The body sent before each assistant turn of the transcript, oldest first, as Claude Code
    sends it (see the module docstring)."""
    system = "\n\n".join(m.text for m in messages if m.role == "system")
    history = _merged_turns(messages)
    for end, message in enumerate(history):
        if message["role"] == "assistant" and end:
            # each body has its own messages and blocks, so a test may change one alone
            sent = [{**m, "content": [dict(b) for b in m["content"]]} for m in history[:end]]
            sent[-1] = _with_breakpoint(sent[-1])
            request: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": sent}
            if system:
                request["system"] = system
            yield request


def _with_breakpoint(message: Mapping[str, Any]) -> dict[str, Any]:
    """``message`` with a cache breakpoint on its last block (when it has one)."""
    blocks = list(message["content"])
    if blocks:
        blocks[-1] = {**blocks[-1], "cache_control": dict(CACHE_CONTROL)}
    return {**message, "content": blocks}


def _result(message: Message) -> dict[str, Any]:
    result: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id or "",
        "content": message.text,
    }
    if message.status == "error":
        result["is_error"] = True
    return result


def _blocks(message: Message) -> list[dict[str, Any]]:
    """A message's Anthropic content blocks: one ``tool_result``, or its text (unless empty)
    followed by its ``tool_use`` blocks."""
    if message.role == "tool":
        return [_result(message)]
    blocks: list[dict[str, Any]] = []
    if message.text:
        blocks.append(_text(message.text))
    blocks += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.args)}
        for c in message.tool_calls
    ]
    return blocks


def _anthropic(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages API turns, one per message, except that results and what follows them share one
    user turn; every message sends a block, even an empty text."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "assistant":
            out.append({"role": "assistant", "content": _blocks(message) or [_text("")]})
            continue
        block = _result(message) if message.role == "tool" else _text(message.text)
        if out and out[-1]["role"] == "user" and _ends_with_result(out[-1]):
            out[-1]["content"].append(block)  # results and what follows share one user turn
        else:
            out.append({"role": "user", "content": [block]})
    return out


def _merged_turns(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages API turns without the system messages, as Claude Code sends them: messages with
    no content left out, consecutive turns of one role merged."""
    history: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if history and history[-1]["role"] == role:
            history[-1]["content"].extend(blocks)
        else:
            history.append({"role": role, "content": blocks})
    return history


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


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


def _gemini(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Gemini contents as the Gemini API's clients send them: the model's turns as ``model``
    contents of text and ``functionCall`` parts (without ids, as the API returns them), the
    results and what follows them as one ``user`` content of ``functionResponse`` parts
    (``{"output": ...}``, or ``{"error": ...}`` for a failure) then text."""
    out: list[dict[str, Any]] = []
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    for message in messages:
        if message.role == "assistant":
            parts: list[dict[str, Any]] = [{"text": message.text}] if message.text else []
            parts += [
                {"functionCall": {"name": c.name, "args": dict(c.args)}} for c in message.tool_calls
            ]
            out.append({"role": "model", "parts": parts or [{"text": ""}]})
            continue
        part = _gemini_result(message, names) if message.role == "tool" else {"text": message.text}
        if out and out[-1]["role"] == "user" and "functionResponse" in out[-1]["parts"][-1]:
            out[-1]["parts"].append(part)  # results and what follows share one user content
        else:
            out.append({"role": "user", "parts": [part]})
    return out


def _gemini_result(message: Message, names: Mapping[str, str]) -> dict[str, Any]:
    key = "error" if message.status == "error" else "output"
    name = message.name or names.get(message.tool_call_id or "", "") or "tool"
    return {"functionResponse": {"name": name, "response": {key: message.text}}}
