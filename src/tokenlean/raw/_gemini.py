"""Gemini API bodies (``generateContent`` / ``streamGenerateContent``) as a neutral view.

``contents`` is a list of ``{"role": "user" | "model", "parts": [...]}``. Tool results are the
``functionResponse`` parts of user contents: the one string of ``response`` (gemini-cli sends
``{"output": ...}``, the SDKs ``{"result": ...}``, errors ``{"error": ...}``), or the JSON of
``response`` when it holds more than one value. Past tool inputs are the ``args`` objects of
``functionCall`` parts. An assistant turn is a run of consecutive model contents.

Gemini calls often carry no ``id``: a call without one gets an id made from its position (``#3``
for the third call in the body, a response to no call ``result #3``), and a
response answers the call with its ``id``, else the first call of the same name not yet
answered in the turn before it (the order clients send them in). Earlier calls keep their
numbers when the history grows, so the same history always plans the same way. Those ids are
never written as ids; the one place they reach the model is the marker that sends a result
repeating an earlier one word for word, which names it (``the earlier `run_shell_command` call
#3``): a number the model can count, where a made-up id would point at nothing.

Nothing else is ever written: thought parts and every ``thoughtSignature``, ``inlineData``,
``fileData``, ``executableCode``, ``codeExecutionResult``, a response's own ``parts`` (the
result is then left whole, like a result holding an image), ``systemInstruction``, ``tools``,
``toolConfig``, ``generationConfig``, ``cachedContent``, contents of roles the view does not
know and every key it does not know pass through as the same objects. Keys are read in the
wire's camelCase or the Python SDK's snake_case, and written back under the key they came in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeGuard

from tokenlean.raw._reading import read_items
from tokenlean.raw._view import Path, RawView, Slot, ViewBuilder
from tokenlean.transcript import Content, Message, ToolCall

__all__ = ["read"]

_USER_ROLES = frozenset({"user", "function"})  # older Vertex samples send results as "function"
_CALL_KEYS = ("functionCall", "function_call")
_RESPONSE_KEYS = ("functionResponse", "function_response")
_NOT_TEXT: Content = ({"type": "unknown"},)


class _Turn:
    """The model contents read so far of the current turn, and the calls still unanswered."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.calls: list[tuple[ToolCall, Slot | None]] = []
        self.open = False
        self.pending: list[ToolCall] = []
        self.numbers: dict[str, int] = {}

    def number(self, kind: str) -> str:
        """The next id of its kind (``#1``, ``#2``... in the body's order)."""
        n = self.numbers[kind] = self.numbers.get(kind, 0) + 1
        return f"{kind}#{n}"

    def start(self) -> None:
        if not self.open:  # results after this turn can no longer answer the one before
            self.open, self.pending = True, []

    def close(self, out: ViewBuilder) -> None:
        if self.open:
            out.turn("\n".join(t for t in self.texts if t), self.calls)
            self.pending = [call for call, _ in self.calls]
        self.texts, self.calls, self.open = [], [], False

    def answer(self, response_id: object, name: str) -> str:
        """The id of the call a response answers (by id, else by name and order)."""
        for k, call in enumerate(self.pending):
            if call.id == response_id or (not _is_text(response_id) and call.name == name):
                del self.pending[k]
                return call.id
        return response_id if _is_text(response_id) else self.number("result ")


def read(body: Mapping[str, Any]) -> RawView | None:
    """The neutral view of ``body``, or ``None`` when it has no list of contents."""
    contents = body.get("contents")
    if not isinstance(contents, list):
        return None
    return read_items(contents, _Reading(), _Reading)


class _Reading:
    """A pass over ``contents``: at rest between turns, carrying the calls still unanswered
    and how many ids of each kind it made."""

    def __init__(self) -> None:
        self.turn = _Turn()

    def item(self, out: ViewBuilder, i: int, content: Any) -> None:
        turn = self.turn
        parts = content.get("parts") if isinstance(content, Mapping) else None
        role = content.get("role", "user") if isinstance(content, Mapping) else None
        # A role that is no string (a list is not even hashable) is a content it cannot read.
        known = isinstance(role, str) and (role == "model" or role in _USER_ROLES)
        if not isinstance(parts, list) or not known:
            turn.close(out)  # what the view cannot read stays as sent, and ends the turn
            return
        if role == "model":
            turn.start()
            _model(turn, i, parts)
        else:
            turn.close(out)
            _user(out, turn, i, parts)

    def end(self, out: ViewBuilder) -> None:
        self.turn.close(out)

    def rest(self) -> tuple[Any, ...] | None:
        turn = self.turn
        return None if turn.open else (tuple(turn.pending), tuple(turn.numbers.items()))

    def resume(self, state: tuple[Any, ...]) -> None:
        pending, numbers = state
        self.turn.pending, self.turn.numbers = list(pending), dict(numbers)


def _model(turn: _Turn, i: int, parts: Sequence[Any]) -> None:
    for j, part in enumerate(parts):
        if not isinstance(part, Mapping):
            continue
        key = _key(part, _CALL_KEYS)
        if key is not None:
            call = _call(turn, part[key], ("contents", i, "parts", j, key))
            turn.calls += [call] if call is not None else []
        elif _is_said(part):
            turn.texts.append(part["text"])


def _call(turn: _Turn, raw: object, path: Path) -> tuple[ToolCall, Slot | None] | None:
    if not isinstance(raw, Mapping) or not _is_text(raw.get("name")):
        return None
    call_id = raw["id"] if _is_text(raw.get("id")) else turn.number("")
    args = raw.get("args")
    if not isinstance(args, Mapping) or not all(isinstance(k, str) for k in args):
        return ToolCall(call_id, raw["name"], {}), None  # arguments the view cannot show
    return ToolCall(call_id, raw["name"], args), Slot((*path, "args"), "object")


def _user(out: ViewBuilder, turn: _Turn, i: int, parts: Sequence[Any]) -> None:
    texts: list[str] = []
    results = 0
    for j, part in enumerate(parts):
        if not isinstance(part, Mapping):
            continue
        key = _key(part, _RESPONSE_KEYS)
        if key is not None and _is_response(part[key]):
            if texts:  # text before a result: keep the order the model reads them in
                out.add(Message(role="user", content="\n".join(texts)))
                texts = []
            _result(out, turn, part[key], ("contents", i, "parts", j, key))
            results += 1
        elif key is None and _is_said(part):
            texts.append(part["text"])
    if texts or not results:
        out.add(Message(role="user", content="\n".join(texts)))


def _result(out: ViewBuilder, turn: _Turn, raw: Mapping[str, Any], path: Path) -> None:
    name = raw["name"]
    call_id = turn.answer(raw.get("id"), name)
    content, slot = _response(raw, (*path, "response"))
    response = raw.get("response")
    status: Literal["error"] | None = (
        "error" if isinstance(response, Mapping) and "error" in response else None
    )
    message = Message(role="tool", content=content, tool_call_id=call_id, name=name, status=status)
    out.result(message, slot)


def _response(raw: Mapping[str, Any], path: Path) -> tuple[Content, Slot | None]:
    """A response as the view shows it, and its slot when it is text only.

    One string is shown as it is; any other response as its JSON (the shortener keeps JSON it
    cuts valid, and finds the output inside an envelope). A response with its own ``parts``
    (images) is shown not text only, so the core leaves it whole.
    """
    response = raw.get("response")
    if not isinstance(response, Mapping):
        return _NOT_TEXT, None
    text = _single_string(response)
    slot = Slot((*path, next(iter(response))), "text") if text is not None else None
    if text is None:
        try:
            text = json.dumps(response, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):  # not JSON: the view cannot show it
            return _NOT_TEXT, None
        slot = Slot(path, "json-object")
    extra = raw.get("parts")
    if isinstance(extra, list) and extra:
        return ({"type": "text", "text": text}, {"type": "parts"}), None
    return text, slot


def _single_string(response: Mapping[Any, Any]) -> str | None:
    if len(response) != 1:
        return None
    key, value = next(iter(response.items()))
    return value if isinstance(key, str) and isinstance(value, str) else None


def _key(part: Mapping[str, Any], keys: tuple[str, str]) -> str | None:
    return next((key for key in keys if key in part), None)


def _is_response(raw: object) -> bool:
    return isinstance(raw, Mapping) and _is_text(raw.get("name"))


def _is_said(part: Mapping[str, Any]) -> bool:
    """A text part the model reads as said (thoughts are not what was said)."""
    return isinstance(part.get("text"), str) and part.get("thought") is not True


def _is_text(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value)
