"""The fake provider's canned answers, one per API, in the providers' shapes: Anthropic's
messages, OpenAI's chat completions and responses, Gemini's content, each whole or streamed."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tokenlean.testing._replies import Recorded, Reply, json_reply, sse_event, sse_reply

__all__ = [
    "CHAT_USAGE",
    "anthropic_events",
    "anthropic_message",
    "canned",
    "chat_completion",
    "chat_events",
    "gemini_events",
    "gemini_response",
    "response_events",
    "response_item_events",
    "response_object",
]


def anthropic_message(
    text: str,
    model: str = "claude-test",
    message_id: str = "msg_test",
    usage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": dict(usage or {"input_tokens": 10, "output_tokens": 5}),
    }


def anthropic_events(
    blocks: Sequence[Mapping[str, Any]],
    stop_reason: str = "end_turn",
    model: str = "claude-test",
    message_id: str = "msg_test",
    usage: Mapping[str, Any] | None = None,
) -> list[bytes]:
    """The event stream of a message with these content blocks (text or tool_use).

    Give each message of a conversation its own ``message_id``: clients such as Claude Code
    merge the blocks of messages that share one. With ``usage``, ``message_start`` carries it
    with a first output count of 1 and ``message_delta`` the final ``output_tokens``, as
    Anthropic streams them.
    """
    first = None if usage is None else {**usage, "output_tokens": 1}
    start = {
        **anthropic_message("", model, message_id, first),
        "content": [],
        "stop_reason": None,
    }
    events = [sse_event({"type": "message_start", "message": start}, "message_start")]
    for i, block in enumerate(blocks):
        if block["type"] == "tool_use":
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events += [
            sse_event(
                {"type": "content_block_start", "index": i, "content_block": opening},
                "content_block_start",
            ),
            sse_event(
                {"type": "content_block_delta", "index": i, "delta": delta}, "content_block_delta"
            ),
            sse_event({"type": "content_block_stop", "index": i}, "content_block_stop"),
        ]
    end = {"stop_reason": stop_reason, "stop_sequence": None}
    final = {"output_tokens": 5 if usage is None else usage["output_tokens"]}
    events.append(
        sse_event({"type": "message_delta", "delta": end, "usage": final}, "message_delta")
    )
    events.append(sse_event({"type": "message_stop"}, "message_stop"))
    return events


#: The usage the canned OpenAI chat answers report.
CHAT_USAGE: Mapping[str, Any] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def chat_completion(
    text: str, model: str = "gpt-test", usage: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": dict(usage or CHAT_USAGE),
    }


def chat_events(
    text: str, model: str = "gpt-test", usage: Mapping[str, Any] | None = None
) -> list[bytes]:
    """The chunks of a streamed chat completion; with ``usage``, a last chunk without choices
    carries it (what OpenAI sends when asked with ``stream_options.include_usage``)."""

    def chunk(choices: list[Any], **more: Any) -> bytes:
        body = {
            "id": "chatcmpl-test",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": choices,
            **more,
        }
        return sse_event(body)

    def choice(delta: dict[str, Any], finish: str | None) -> list[Any]:
        return [{"index": 0, "delta": delta, "finish_reason": finish}]

    words = [w + " " for w in text.split()] or [""]
    events = [chunk(choice({"role": "assistant", "content": ""}, None))]
    events += [chunk(choice({"content": w}, None)) for w in words]
    events.append(chunk(choice({}, "stop")))
    if usage is not None:
        events.append(chunk([], usage=dict(usage)))
    return [*events, sse_event("[DONE]")]


def response_object(
    text: str, model: str = "gpt-test", usage: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}]
    item = {
        "type": "message",
        "id": "msg_test",
        "role": "assistant",
        "status": "completed",
        "content": content,
    }
    return {
        "id": "resp_test",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": [item],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": dict(usage or {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}),
    }


def response_events(
    text: str, model: str = "gpt-test", usage: Mapping[str, Any] | None = None
) -> list[bytes]:
    done = response_object(text, model, usage)
    created = {**done, "status": "in_progress", "output": []}
    events = [
        sse_event(
            {"type": "response.created", "response": created, "sequence_number": 0},
            "response.created",
        )
    ]
    for n, word in enumerate(text.split(), start=1):
        delta = {
            "type": "response.output_text.delta",
            "item_id": "msg_test",
            "output_index": 0,
            "content_index": 0,
            "delta": word + " ",
            "sequence_number": n,
        }
        events.append(sse_event(delta, "response.output_text.delta"))
    completed = {"type": "response.completed", "response": done, "sequence_number": len(events)}
    return [*events, sse_event(completed, "response.completed")]


def response_item_events(
    items: Sequence[Mapping[str, Any]], model: str = "gpt-test", response_id: str = "resp_test"
) -> list[bytes]:
    """The event stream of a response whose output is ``items`` (messages, ``function_call`` or
    ``custom_tool_call`` items), each sent whole as ``response.output_item.added`` and
    ``.done``: the events Codex builds its turn from."""
    done = {**response_object("", model), "id": response_id, "output": list(items)}
    created = {**done, "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": created}]
    for n, item in enumerate(items):
        for kind in ("response.output_item.added", "response.output_item.done"):
            events.append({"type": kind, "output_index": n, "item": item})
    events.append({"type": "response.completed", "response": done})
    return [sse_event({**e, "sequence_number": n}, e["type"]) for n, e in enumerate(events)]


def gemini_response(
    text: str,
    model: str = "gemini-test",
    finish: str | None = "STOP",
    usage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``generateContent`` answer (also one chunk of a stream, with ``finish=None``)."""
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
    if finish is not None:
        candidate["finishReason"] = finish
    usage = usage or {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
    return {
        "candidates": [{**candidate, "index": 0}],
        "usageMetadata": dict(usage),
        "modelVersion": model,
        "responseId": "resp_test",
    }


def gemini_events(
    text: str, model: str = "gemini-test", usage: Mapping[str, Any] | None = None
) -> list[bytes]:
    """The ``streamGenerateContent?alt=sse`` form: one chunk per word, the last one finished.
    With ``usage``, each chunk carries the usage so far (one candidate token per word before
    the last), the last one ``usage`` itself, as Gemini streams it."""
    words = [w + " " for w in text.split()] or [""]
    words[-1] = words[-1].rstrip()
    last = len(words) - 1

    def so_far(i: int) -> Mapping[str, Any] | None:
        return usage if usage is None or i == last else {**usage, "candidatesTokenCount": i + 1}

    return [
        sse_event(gemini_response(w, model, "STOP" if i == last else None, so_far(i)))
        for i, w in enumerate(words)
    ]


def _gemini(request: Recorded, text: str) -> Reply:
    """Gemini streams by path; ``alt=sse`` asks for events, else the chunks come as one array."""
    if not request.path.endswith(":streamGenerateContent"):
        return json_reply(gemini_response(text))
    if "alt=sse" in request.query.split("&"):
        return sse_reply(gemini_events(text))
    return json_reply([json.loads(e.removeprefix(b"data: ")) for e in gemini_events(text)])


def _include_usage(request: Recorded) -> bool:
    try:
        return request.json()["stream_options"]["include_usage"] is True
    except (ValueError, LookupError, TypeError, RecursionError):
        return False


def canned(request: Recorded, text: str = "Hello from the fake upstream") -> Reply:
    """A plausible answer for any of the four APIs, streamed when the request asks for it."""
    if request.path.endswith((":generateContent", ":streamGenerateContent")):
        return _gemini(request, text)
    try:
        stream = bool(request.json().get("stream"))
    except (ValueError, AttributeError, RecursionError):
        stream = False
    if request.path.startswith("/v1/messages/count_tokens"):
        return json_reply({"input_tokens": 42})
    if request.path.startswith("/v1/messages"):
        blocks = [{"type": "text", "text": text}]
        return (
            sse_reply(anthropic_events(blocks)) if stream else json_reply(anthropic_message(text))
        )
    if request.path.startswith("/v1/chat/completions"):
        if not stream:
            return json_reply(chat_completion(text))
        return sse_reply(chat_events(text, usage=CHAT_USAGE if _include_usage(request) else None))
    if request.path.startswith("/v1/responses"):
        return sse_reply(response_events(text)) if stream else json_reply(response_object(text))
    return json_reply({"error": {"message": f"no such path {request.path}"}}, 404)
