"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``) as neutral messages.

Claude Code writes one line per content block: an assistant API message is split over several
``assistant`` lines sharing ``message.id`` (tool results of its earlier calls may sit between
them), so lines are merged back into one turn by that id. Tool results are ``user`` lines with
``tool_result`` blocks. A prompt queued while the agent worked reached the model as the user's:
an ``attachment`` line of type ``queued_command`` is a user message; other attachments are
skipped. Sub-agent lines (``isSidechain``) in a session's file are another conversation and
skipped, as are thinking blocks (empty signed ones included: the neutral view has no place for
them), ``<synthetic>`` assistant lines Claude Code writes itself, and every other line type
(summary, progress, system, snapshots, ``ai-title``, ``mode`` ...); a type this reader has never
seen is counted apart (``unknown_type:<type>``), so that a report can say so.

A sub-agent's own transcript (newer Claude Code versions write one per Task call, in
``<session>/subagents/agent-<id>.jsonl``) is a file whose first conversation line is a sidechain
line: it is the sub-agent's conversation, read as a session of its own (``meta["subagent"]``
holds its ``agentId``), never merged into its parent's.

A ``system`` line of subtype ``compact_boundary`` (``/compact``, or the automatic compaction of a
full context) ends a context window: the model is sent from then on only what follows it, the
summary first (a ``user`` line marked ``isCompactSummary``). Each window is read as its own run
(``meta["compactions"]`` counts the boundaries).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tokenlean.replay._windows import Windows, read_lines
from tokenlean.transcript import Message, ToolCall

__all__ = ["read_claude_code"]

#: The line types Claude Code writes (2.0 to 2.1.2xx) that hold nothing the model was sent.
_OTHER_TYPES = frozenset(
    {
        "summary", "progress", "system", "file-history-snapshot", "file-history-delta",
        "queue-operation", "last-prompt", "custom-title", "ai-title", "mode",
        "permission-mode", "pr-link",
    }
)  # fmt: skip


@dataclass
class _Turn:
    """An assistant turn being assembled from the lines of one API message."""

    id: str
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)

    def message(self) -> Message:
        return Message(
            role="assistant",
            content="\n".join(self.texts),
            id=self.id,
            tool_calls=tuple(self.calls),
        )


def read_claude_code(objects: Iterable[Any]) -> Windows:
    """Neutral messages of each context window of one Claude Code transcript, and counts of
    what was skipped."""
    return read_lines(_Reader(), objects)


class _Reader:
    def __init__(self) -> None:
        self.items: list[Message | _Turn] = []
        self.turns: dict[str, _Turn] = {}
        self.skipped: Counter[str] = Counter()
        self.session: dict[str, Any] = {}
        self.windows: list[list[Message]] = []
        self.sidechain: bool | None = None  # a sub-agent's transcript: told by its first turn

    def line(self, obj: Any) -> None:
        if not isinstance(obj, Mapping):
            self.skipped["not_an_object"] += 1
            return
        kind = str(obj.get("type"))
        message = obj.get("message")
        if kind == "attachment" and self._read(obj):
            self._attachment(obj.get("attachment"))
        elif kind == "system" and obj.get("subtype") == "compact_boundary":
            self._boundary(obj)
        elif kind not in ("user", "assistant") or not isinstance(message, Mapping):
            known = kind in _OTHER_TYPES or kind in ("user", "assistant", "attachment")
            self.skipped[f"line:{kind}" if known else f"unknown_type:{kind}"] += 1
        elif not self._read(obj):
            self.skipped["main_chain" if self.sidechain else "sidechain"] += 1
        elif kind == "assistant":
            self._remember(obj)
            self._assistant(message)
        else:
            self._remember(obj)
            self._user(message.get("content"))

    def _read(self, obj: Mapping[str, Any]) -> bool:
        """Whether a line is of the conversation read: the main one, or a sub-agent's in its own
        transcript (whose first turn is a sidechain line)."""
        side = bool(obj.get("isSidechain"))
        if self.sidechain is None and obj.get("type") in ("user", "assistant"):
            self.sidechain = side
            if side and isinstance(obj.get("agentId"), str):
                self.session["subagent"] = obj["agentId"]
            elif side:
                self.session["subagent"] = True
        return side == bool(self.sidechain)

    def _attachment(self, attachment: Any) -> None:
        """What Claude Code attached to the conversation: a queued prompt (typed, or a
        background task's notification, while the agent worked) was sent to the model as the
        user's; hooks' output, listings, reminders and the rest are Claude Code's own."""
        kind = attachment.get("type") if isinstance(attachment, Mapping) else None
        prompt = _text(attachment.get("prompt")) if kind == "queued_command" else ""
        if prompt:
            self.items.append(Message(role="user", content=prompt))
        else:
            self.skipped[f"attachment:{kind}"] += 1

    def _boundary(self, obj: Mapping[str, Any]) -> None:
        """A compaction: what came before is another context window (a sub-agent's compaction
        is another conversation's)."""
        if not self._read(obj):
            self.skipped["main_chain" if self.sidechain else "sidechain"] += 1
            return
        self.windows.append(self.messages())
        self.items, self.turns = [], {}

    def _remember(self, obj: Mapping[str, Any]) -> None:
        for key, name in (("sessionId", "session_id"), ("version", "claude_code_version")):
            if isinstance(obj.get(key), str):
                self.session.setdefault(name, obj[key])

    def _assistant(self, message: Mapping[str, Any]) -> None:
        if message.get("model") == "<synthetic>":
            self.skipped["synthetic_assistant"] += 1
            return
        if isinstance(message.get("model"), str):
            self.session.setdefault("model", message["model"])
        key = str(message.get("id") or f"line-{len(self.items)}")
        turn = self.turns.get(key)
        if turn is None:
            turn = self.turns[key] = _Turn(key)
            self.items.append(turn)
        content = message.get("content")
        for block in content if isinstance(content, list) else [content]:
            self._assistant_block(turn, block)

    def _assistant_block(self, turn: _Turn, block: Any) -> None:
        if isinstance(block, str):
            turn.texts.append(block)
            return
        kind = str(block.get("type")) if isinstance(block, Mapping) else "?"
        if kind == "text" and isinstance(block.get("text"), str):
            turn.texts.append(block["text"])
        elif kind == "tool_use" and isinstance(block.get("name"), str) and block.get("id"):
            args = block.get("input")
            turn.calls.append(
                ToolCall(
                    id=str(block["id"]),
                    name=block["name"],
                    args=dict(args) if isinstance(args, Mapping) else {"input": args},
                )
            )
        else:
            self.skipped[f"assistant_block:{kind}"] += 1

    def _user(self, content: Any) -> None:
        """Results first, then what the user typed (it may share the line with a result)."""
        blocks = content if isinstance(content, list) else [content]
        texts: list[str] = []
        for block in blocks:
            if isinstance(block, str):
                texts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "tool_result":
                self._result(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            else:
                kind = block.get("type") if isinstance(block, Mapping) else type(block).__name__
                self.skipped[f"user_block:{kind}"] += 1
        if texts:
            self.items.append(Message(role="user", content="\n".join(texts)))

    def _result(self, block: Mapping[str, Any]) -> None:
        if not isinstance(block.get("tool_use_id"), str):
            self.skipped["tool_result_without_id"] += 1
            return
        self.items.append(
            Message(
                role="tool",
                content=_text(block.get("content")),
                tool_call_id=block["tool_use_id"],
                status="error" if block.get("is_error") else None,
            )
        )

    def messages(self) -> list[Message]:
        return [item.message() if isinstance(item, _Turn) else item for item in self.items]

    def meta(self) -> dict[str, Any]:
        counts = {"compactions": len(self.windows)} if self.windows else {}
        return {**self.session, **counts, "skipped": dict(sorted(self.skipped.items()))}


def _text(content: Any) -> str:
    """A tool result's text as the model read it (images and other blocks leave no text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b["text"]) for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return "" if content is None else str(content)
