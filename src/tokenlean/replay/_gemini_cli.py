"""gemini-cli sessions (``~/.gemini/tmp/<project>/chats/session-*.jsonl``) as neutral messages.

A session file is JSON Lines: a first line of metadata (``sessionId``, ``projectHash``), then
message records (``{"id", "type", "content", ...}``), each written again under the same ``id``
when it changes (the last copy counts, in the place of the first), ``{"$set": {...}}`` metadata
updates (``$set.messages`` replaces every message so far) and ``{"$rewindTo": id}``, which drops
that message and every one after it. Releases before 0.61 wrote the whole conversation as one
JSON object with ``messages``; it reads the same way.

``user`` records hold Gemini parts: text is the user's, and ``functionResponse`` parts are the
results of the calls before them. ``gemini`` records are the model's turns: their text and their
``toolCalls`` (id, name, args). A call whose result no ``user`` record holds takes the
``result`` recorded on the call itself. Thoughts, token counts and the CLI's own ``info`` /
``error`` / ``warning`` lines are skipped and counted. A field of an unexpected JSON type (a
``toolCalls`` that is not a list, an id that is not text ...) is read as absent, never an error.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from tokenlean.replay._windows import Windows
from tokenlean.transcript import Message, ToolCall

__all__ = ["read_gemini_cli"]


def read_gemini_cli(objects: Sequence[Any]) -> Windows:
    """Neutral messages of one gemini-cli session (one context window), and counts of what was
    skipped."""
    records, session, skipped = _records(objects)
    reader = _Reader(skipped)
    for record in records:
        kind = record.get("type")
        if kind == "gemini":
            reader.turn(record)
        elif kind == "user":
            reader.user(record.get("content"))
        else:
            skipped[f"record:{kind}"] += 1
    reader.settle()
    if (model := next(_models(records), None)) is not None:
        session["model"] = model
    return [reader.out], {**session, "skipped": dict(sorted(skipped.items()))}


class _Reader:
    """The messages read so far, and the results recorded on calls no user record answered."""

    def __init__(self, skipped: Counter[str]) -> None:
        self.out: list[Message] = []
        self.pending: dict[str, str] = {}
        self.skipped = skipped

    def settle(self) -> None:
        """The results recorded on the calls, for the calls no user record answered."""
        for call_id, text in self.pending.items():
            self.out.append(Message(role="tool", content=text, tool_call_id=call_id))
        self.pending.clear()

    def turn(self, record: Mapping[str, Any]) -> None:
        self.settle()
        calls = [c for c in _listed(record.get("toolCalls")) if isinstance(c, Mapping)]
        if record.get("thoughts"):
            self.skipped["thoughts"] += 1
        text = _text(record.get("content"))
        made = tuple(_call(c) for c in calls if isinstance(c.get("id"), str))
        if not text and not made:
            self.skipped["empty_turn"] += 1
            return
        self.out.append(Message(role="assistant", content=text, tool_calls=made))
        self.pending.update(_recorded_results(calls))

    def user(self, content: Any) -> None:
        answers, text = _user_parts(content)
        for call_id, result in answers:
            self.pending.pop(call_id, None)
            self.out.append(Message(role="tool", content=result, tool_call_id=call_id))
        if text:
            self.settle()
            self.out.append(Message(role="user", content=text))


def _records(
    objects: Sequence[Any],
) -> tuple[list[Mapping[str, Any]], dict[str, Any], Counter[str]]:
    """The message records as the CLI reloads them (last copy of each id, rewinds applied)."""
    messages: dict[str, Mapping[str, Any]] = {}
    session: dict[str, Any] = {}
    skipped: Counter[str] = Counter()
    for obj in objects:
        if not isinstance(obj, Mapping):
            skipped["not_an_object"] += 1
        elif isinstance(rewind := obj.get("$rewindTo"), str):
            ids = list(messages)
            for gone in ids[ids.index(rewind) :] if rewind in ids else ids:
                del messages[gone]
        elif isinstance(obj.get("id"), str):
            messages[obj["id"]] = obj
        elif isinstance(update := obj.get("$set"), Mapping):
            _merge(messages, session, update, replaces=True)
        elif "sessionId" in obj:
            _merge(messages, session, obj, replaces=False)
        else:
            skipped["unknown_line"] += 1
    return list(messages.values()), session, skipped


def _merge(
    messages: dict[str, Mapping[str, Any]],
    session: dict[str, Any],
    fields: Mapping[str, Any],
    *,
    replaces: bool,
) -> None:
    """A metadata line or a ``$set`` update: its messages (those of a ``$set`` replace every one
    so far) and the session's id."""
    if isinstance(fields.get("messages"), list):
        if replaces:
            messages.clear()
        for message in fields["messages"]:
            if isinstance(message, Mapping) and isinstance(message.get("id"), str):
                messages[message["id"]] = message
    if isinstance(fields.get("sessionId"), str):
        session["session_id"] = fields["sessionId"]


def _models(records: Sequence[Mapping[str, Any]]) -> Any:
    return (r["model"] for r in records if r.get("type") == "gemini" and _is_text(r.get("model")))


def _listed(value: Any) -> list[Any]:
    """A field that should hold a list: its items, or none when it holds anything else."""
    return value if isinstance(value, list) else []


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _call(call: Mapping[str, Any]) -> ToolCall:
    args = call.get("args")
    name = call.get("name")
    return ToolCall(
        id=call["id"],
        name=name if isinstance(name, str) else "?",
        args=dict(args) if isinstance(args, Mapping) else {},
    )


def _recorded_results(calls: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The results recorded on the calls themselves (a list of ``functionResponse`` parts)."""
    out: dict[str, str] = {}
    for call in calls:
        call_id, parts = call.get("id"), call.get("result")
        if not isinstance(call_id, str) or not isinstance(parts, list):
            continue
        answers, text = _user_parts(parts)
        texts = [result for _, result in answers] + ([text] if text else [])
        if texts:
            out[call_id] = "\n".join(texts)
    return out


def _user_parts(content: Any) -> tuple[list[tuple[str, str]], str]:
    """A user record's call results (``(call id, text)``) and its own text."""
    parts = content if isinstance(content, list) else [content]
    answers: list[tuple[str, str]] = []
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and isinstance(part.get("functionResponse"), Mapping):
            response = part["functionResponse"]
            if isinstance(response.get("id"), str):
                answers.append((response["id"], _response_text(response.get("response"))))
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return answers, "\n".join(texts)


def _response_text(response: Any) -> str:
    """What the model read of a function's response: its ``output`` (or ``error``) text."""
    if isinstance(response, Mapping):
        for key in ("output", "error"):
            if isinstance(response.get(key), str) and len(response) == 1:
                return str(response[key])
    return json.dumps(response, ensure_ascii=False)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return _user_parts(content)[1]
