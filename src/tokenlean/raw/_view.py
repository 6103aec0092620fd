"""Between a raw request body and the neutral transcript: the view, its addresses, and the patch.

An adapter reads a body into a :class:`RawView`: the neutral messages the core plans on, and for
each tool result and each past tool call it could rewrite, the :class:`Slot` in the body where
that text lives and how it is written there. :func:`apply` writes edits back into a *new* body,
copying only the containers on the way to each edited value: everything else (thinking blocks,
images, ``cache_control``, fields no SDK knows) is the very same object as in the input.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from tokenlean.raw._reuse import reused
from tokenlean.transcript import Content, Message, ToolCall

__all__ = [
    "FROZEN",
    "BodyReader",
    "MessageRead",
    "MessageReader",
    "Path",
    "RawView",
    "Slot",
    "ViewBuilder",
    "Write",
    "apply",
    "plain_text",
    "result_content",
    "shell_output",
    "strip_cache_control",
    "text_blocks",
]

Key = str | int
Path = tuple[Key, ...]

Form = Literal["text", "text-blocks", "object", "json", "raw-text", "json-object", "shell-output"]
"""How a value is written: a string (``text``); a list of text blocks, replaced by one block of
the same shape (``text-blocks``); an arguments object (``object``); arguments as a JSON string
(``json``, OpenAI); a free-form input string that the view shows as ``{"input": ...}``
(``raw-text``, custom tools); an object the view shows as its JSON text (``json-object``, a
Gemini function response), written back as the object the new text is, or as
``{"output": text}`` when the new text is no longer a JSON object (Gemini reads a response's
``output`` as the function's output); a built-in shell's one chunk of output (``shell-output``,
OpenAI's ``shell_call_output``), shown as its stdout then its stderr, written back as that chunk
with the new text as its stdout, an empty stderr and its outcome kept)."""


@dataclass(frozen=True, slots=True)
class Slot:
    """Where a value lives in the body (``path`` from the body's root) and how it is written."""

    path: Path
    form: Form


@dataclass(frozen=True, slots=True)
class RawView:
    """A body read as neutral messages, with the address of every value that may be rewritten.

    ``results[i]`` is where tool result ``messages[i]`` keeps its text (only text-only results
    have one); ``calls[(i, call_id)]`` is where assistant turn ``messages[i]`` keeps that call's
    input (only inputs the adapter can write back have one).
    """

    messages: tuple[Message, ...]
    results: Mapping[int, Slot]
    calls: Mapping[tuple[int, str], Slot]


@dataclass(frozen=True, slots=True)
class Write:
    """One value to write: a tool result's new text, or a call's new arguments."""

    index: int
    text: str | None = None
    call_id: str | None = None
    args: Mapping[str, Any] | None = None


def text_blocks(content: object) -> list[str] | None:
    """The texts of a list made only of text blocks (any ``*text`` type), else ``None``."""
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    for block in content:
        if not isinstance(block, Mapping) or not isinstance(block.get("text"), str):
            return None
        if not str(block.get("type", "")).endswith("text"):
            return None
        texts.append(block["text"])
    return texts


def result_content(content: object, path: Path) -> tuple[Content, Slot | None]:
    """A tool result's content as the view shows it, and its slot when it is text only.

    Results holding anything but text (images, documents) are shown with those blocks reduced
    to their type, so the view knows they are not text only and the core leaves them alone.
    """
    if isinstance(content, str):
        return content, Slot(path, "text")
    if content is None or content == []:
        return "", None
    texts = text_blocks(content)
    if texts is not None:
        return "\n".join(texts), Slot(path, "text-blocks")
    if not isinstance(content, list):
        return ({"type": "unknown"},), None
    return tuple(_stub(block) for block in content), None


def shell_output(chunks: object, path: Path) -> tuple[Content, Slot | None]:
    """A built-in shell's output (a list of ``stdout``/``stderr`` chunks, one per command) as
    the view shows it: each chunk's stdout, then its stderr. Only an output of one chunk has a
    slot: the outputs of several commands each keep their own exit code, so they are never
    merged into one. Chunks that are not text are shown as a stub the core leaves alone."""
    if not isinstance(chunks, list) or not chunks:
        return "", None
    texts: list[str] = []
    for chunk in chunks:
        streams = (
            [chunk.get(key) for key in ("stdout", "stderr")] if isinstance(chunk, Mapping) else []
        )
        if not streams or not all(isinstance(stream, str | None) for stream in streams):
            return ({"type": "unknown"},), None
        texts.append("\n".join(stream for stream in streams if isinstance(stream, str) and stream))
    return "\n".join(texts), Slot(path, "shell-output") if len(chunks) == 1 else None


def _stub(block: object) -> Mapping[str, Any]:
    if isinstance(block, Mapping):
        if isinstance(block.get("text"), str):
            return {"type": "text", "text": block["text"]}
        return {"type": str(block.get("type", "unknown"))}
    return {"type": "unknown"}


def plain_text(content: object) -> str:
    """The text of message content: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"] for b in content if isinstance(b, Mapping) and isinstance(b.get("text"), str)
        )
    return ""


def apply(body: Mapping[str, Any], view: RawView, writes: Iterable[Write]) -> dict[str, Any]:
    """A new body with ``writes`` applied; ``body`` is never mutated.

    A write whose value has no slot in ``view`` is skipped (the view decides what is writable).
    """
    patches: list[tuple[Path, Any]] = []
    for write in writes:
        if write.text is not None and write.index in view.results:
            slot = view.results[write.index]
            patches.append((slot.path, _render_text(slot, _at(body, slot.path), write.text)))
        if write.call_id is not None and write.args is not None:
            call = view.calls.get((write.index, write.call_id))
            if call is not None:
                patches.append((call.path, _render_args(call, write.args)))
    if not patches:
        return dict(body)
    if FROZEN.get():  # the same new message object for the same edits of the same message
        patches = reused(body, patches, _patch)
    return dict(_patch(body, patches))


def _at(body: Any, path: Path) -> Any:
    node = body
    for key in path:
        node = node[key]
    return node


def _render_text(slot: Slot, current: Any, text: str) -> Any:
    if slot.form == "json-object":
        return _json_object(text)
    if slot.form == "shell-output":
        return [{**current[0], "stdout": text, "stderr": ""}]
    if slot.form != "text-blocks":
        return text
    # One block replaces the list (providers reject empty text blocks). It is a copy of the last
    # block, so its type and fields stay; a cache breakpoint set on any block of the list stays
    # on the result (the cache then ends where it ended: after this result).
    block = dict(current[-1])
    block["text"] = text
    marked = [b for b in current if isinstance(b, Mapping) and "cache_control" in b]
    if marked and "cache_control" not in block:
        block["cache_control"] = marked[-1]["cache_control"]
    return [block]


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"output": text}


def _render_args(slot: Slot, args: Mapping[str, Any]) -> Any:
    if slot.form == "json":
        return json.dumps(args, ensure_ascii=False)
    if slot.form == "raw-text":
        return args.get("input", "")
    return dict(args)


def _patch(node: Any, patches: Sequence[tuple[Path, Any]]) -> Any:
    """A shallow copy of ``node`` with each ``(path, value)`` set, copying only along the paths."""
    groups: dict[Key, list[tuple[Path, Any]]] = {}
    for path, value in patches:
        groups.setdefault(path[0], []).append((path[1:], value))
    new: Any = dict(node) if isinstance(node, Mapping) else list(node)
    for key, items in groups.items():
        leaves = [value for rest, value in items if not rest]
        new[key] = leaves[-1] if leaves else _patch(node[key], items)
    return new


class ViewBuilder:
    """Collects neutral messages and their slots while an adapter walks a body."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.results: dict[int, Slot] = {}
        self.calls: dict[tuple[int, str], Slot] = {}

    def add(self, message: Message) -> int:
        self.messages.append(message)
        return len(self.messages) - 1

    def result(self, message: Message, slot: Slot | None) -> None:
        index = self.add(message)
        if slot is not None:
            self.results[index] = slot

    def turn(self, text: str, calls: Sequence[tuple[ToolCall, Slot | None]]) -> None:
        """An assistant turn: its text, and each call with where its input can be written."""
        tool_calls = tuple(call for call, _ in calls)
        index = self.add(Message(role="assistant", content=text, tool_calls=tool_calls))
        for call, slot in calls:
            if slot is not None:
                self.calls[(index, call.id)] = slot

    def build(self) -> RawView:
        return RawView(tuple(self.messages), dict(self.results), dict(self.calls))

    def extend(self, read: MessageRead) -> None:
        """Add what reading one message added to a builder of its own."""
        at = len(self.messages)
        self.messages += read.messages
        self.results.update({at + k: slot for k, slot in read.results.items()})
        self.calls.update({(at + k, call_id): slot for (k, call_id), slot in read.calls.items()})


MessageReader = Callable[[ViewBuilder, int, Mapping[str, Any]], None]
BodyReader = Callable[[Mapping[str, Any]], "RawView | None"]


#: Whether the bodies read now hold message objects nobody mutates
#: (:func:`tokenlean.raw._reading.frozen_bodies`).
FROZEN: ContextVar[bool] = ContextVar("tokenlean_frozen_bodies", default=False)


@dataclass(frozen=True, slots=True)
class MessageRead:
    """What ``reader`` added to the view for one message at ``index`` (slots name the index)."""

    reader: MessageReader
    index: int
    messages: tuple[Message, ...]
    results: Mapping[int, Slot]
    calls: Mapping[tuple[int, str], Slot]


def strip_cache_control(value: Any) -> Any:
    """``value`` (a body or part of one) without any ``cache_control`` key, for comparisons."""
    if isinstance(value, Mapping):
        return {k: strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_control(v) for v in value]
    return value
