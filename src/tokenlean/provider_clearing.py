"""An offline model of Anthropic's server-side tool-result clearing (``clear_tool_uses_20250919``).

Anthropic's Messages API clears old tool results itself when a request carries
``context_management={"edits": [{"type": "clear_tool_uses_20250919", ...}]}`` (beta header
``context-management-2025-06-27``). The client keeps sending its full history; the server edits
the prompt before the model reads it. So the model sees, and the bill counts, the cleared prompt,
and the prompt cache matches on the cleared prompt too: the client's bytes never decide a hit.

:func:`clear_tool_uses` is that edit as a pure function of one request (tool schemas and
messages, system prompt first), which is what the server sees:

- **trigger** (default 100,000 ``input_tokens``, or a count of ``tool_uses``): nothing happens
  until the request *exceeds* it, counted on the full request (tools, system prompt, messages);
- **keep** (default 3): the newest tool uses are never cleared; every older one is (the API
  "removes the oldest tool interactions first, preserving the most recent ones"), its result
  replaced by :data:`PLACEHOLDER`, its tool call left in place so every ``tool_use`` keeps its
  ``tool_result``;
- **exclude_tools**: tool uses of these tools are never cleared (they still count among the
  newest ``keep``, as in LangChain's published mirror of this edit);
- **clear_at_least**: when clearing would free fewer input tokens than this, nothing is cleared;
- **clear_tool_inputs** (``False``, ``True`` or a collection of tool names): the cleared calls'
  arguments are emptied too;
- :class:`AppliedEdit` is what the response reports in ``context_management.applied_edits``
  (``cleared_tool_uses``, ``cleared_input_tokens``); ``None`` when the edit did not apply.

Why it breaks the cache on every call once past the trigger: the server keeps no state between
requests, and the client sends the whole history each time, so each request past the trigger is
cleared down to the newest ``keep`` again. Each new tool result pushes one more old result out of
the kept set, so the cleared prompt changes there and the cache is written again from that point
on every call. ``clear_at_least`` does not batch this: it is compared with all that one request
clears (every old result), which past the first activation is nearly always large.

Where the model may differ from the server (the pages below document the behaviour, not the
implementation):

- the placeholder's exact text is not documented; :data:`PLACEHOLDER` is LangChain's (whose
  ``ClearToolUsesEdit`` says it mirrors this edit): a few tokens either way;
- the server counts the trigger with Claude's tokenizer; the model counts with the counter it is
  given (the replay's, o200k_base or the estimate), so a request near the trigger may fall on the
  other side of it;
- whether excluded tool uses count among the newest ``keep`` is not documented (see above);
- what a cleared ``tool_use`` input becomes is not documented; the model sends ``{}``;
- thinking-block clearing (``clear_thinking_20251015``) and server-side compaction are not
  modelled: the recordings hold no thinking blocks, and a compaction summary is written by the
  model, so no offline function reproduces it.

Sources: https://platform.claude.com/docs/en/build-with-claude/context-editing (configuration
options, "context editing happens server-side", prompt caching, the ``applied_edits`` response),
https://docs.claude.com/en/docs/build-with-claude/context-editing (the earlier version), and
https://reference.langchain.com/python/langchain/agents/middleware/context_editing/ClearToolUsesEdit
(the client-side mirror and its ``[cleared]`` placeholder).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from tokenlean import checks
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter, count_request, message_tokens
from tokenlean.transcript import Message, ToolCall

__all__ = [
    "BETA_HEADER",
    "EDIT_TYPE",
    "PLACEHOLDER",
    "TRIGGER_TYPES",
    "AppliedEdit",
    "ClearToolUses",
    "ServerCleared",
    "TriggerType",
    "clear_tool_uses",
]

EDIT_TYPE = "clear_tool_uses_20250919"
BETA_HEADER = "context-management-2025-06-27"
#: What a cleared result is sent as (the server's own text is not documented; see above).
PLACEHOLDER = "[cleared]"
TriggerType = Literal["input_tokens", "tool_uses"]
TRIGGER_TYPES: tuple[TriggerType, ...] = get_args(TriggerType)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClearToolUses:
    """The edit's options, with the API's defaults (``clear_at_least=0``: no minimum)."""

    trigger: int = 100_000
    trigger_type: TriggerType = "input_tokens"
    keep: int = 3
    clear_at_least: int = 0
    exclude_tools: frozenset[str] = frozenset()
    clear_tool_inputs: bool | frozenset[str] = False
    placeholder: str = PLACEHOLDER

    def __post_init__(self) -> None:
        for name in ("trigger", "keep", "clear_at_least"):
            checks.integer(getattr(self, name), name, at_least=0)
        checks.one_of(self.trigger_type, "trigger_type", TRIGGER_TYPES)
        checks.text(self.placeholder, "placeholder")
        excluded = checks.collection_of_names(self.exclude_tools, "exclude_tools")
        object.__setattr__(self, "exclude_tools", excluded)
        if not isinstance(self.clear_tool_inputs, bool):
            names = checks.collection_of_names(self.clear_tool_inputs, "clear_tool_inputs")
            object.__setattr__(self, "clear_tool_inputs", names)

    def clears_input(self, tool: str) -> bool:
        """Whether a cleared call of ``tool`` also loses its arguments."""
        if isinstance(self.clear_tool_inputs, bool):
            return self.clear_tool_inputs
        return tool in self.clear_tool_inputs

    def edit(self) -> dict[str, Any]:
        """The request's ``context_management`` edit that turns these options on at the API."""
        out: dict[str, Any] = {
            "type": EDIT_TYPE,
            "trigger": {"type": self.trigger_type, "value": self.trigger},
            "keep": {"type": "tool_uses", "value": self.keep},
        }
        if self.clear_at_least:
            out["clear_at_least"] = {"type": "input_tokens", "value": self.clear_at_least}
        if self.exclude_tools:
            out["exclude_tools"] = sorted(self.exclude_tools)
        inputs = self.clear_tool_inputs
        out["clear_tool_inputs"] = inputs if isinstance(inputs, bool) else sorted(inputs)
        return out


@dataclass(frozen=True, slots=True)
class AppliedEdit:
    """What the response reports for one applied edit."""

    cleared_tool_uses: int
    cleared_input_tokens: int

    def report(self) -> dict[str, Any]:
        """The entry of ``context_management.applied_edits`` in the API's response."""
        return {
            "type": EDIT_TYPE,
            "cleared_tool_uses": self.cleared_tool_uses,
            "cleared_input_tokens": self.cleared_input_tokens,
        }


@dataclass(frozen=True, slots=True)
class ServerCleared:
    """The prompt the model reads after the server's edit, and what the response reports."""

    messages: tuple[Message, ...]
    applied: AppliedEdit | None = None


def clear_tool_uses(
    messages: Sequence[Message],
    *,
    tools: Sequence[Mapping[str, Any]] = (),
    settings: ClearToolUses | None = None,
    counter: TokenCounter | None = None,
) -> ServerCleared:
    """The request ``messages`` (with ``tools``) as the model reads it once the server has
    applied ``settings`` (default: the API's defaults); ``messages`` are not changed."""
    options = settings if settings is not None else ClearToolUses()
    checks.instance(options, "settings", ClearToolUses, "a ClearToolUses")
    used = checks.token_counter(counter if counter is not None else DEFAULT_COUNTER, "counter")
    uses = _tool_uses(messages)
    old = uses[: max(0, len(uses) - options.keep)]
    chosen = [(index, tool) for index, tool in old if tool not in options.exclude_tools]
    unchanged = ServerCleared(tuple(messages))
    if not chosen or not _triggered(messages, tools, len(uses), options, used):
        return unchanged
    out = _cleared(messages, chosen, options)
    freed = sum(
        message_tokens(before, used) - message_tokens(after, used)
        for before, after in zip(messages, out, strict=True)
        if before is not after
    )
    if options.clear_at_least and freed < options.clear_at_least:
        return unchanged
    return ServerCleared(tuple(out), AppliedEdit(len(chosen), freed))


def _tool_uses(messages: Sequence[Message]) -> list[tuple[int, str]]:
    """Each tool result's position and tool name, oldest first."""
    names = {call.id: call.name for message in messages for call in message.tool_calls}
    return [
        (index, message.name or names.get(message.tool_call_id or "", ""))
        for index, message in enumerate(messages)
        if message.role == "tool"
    ]


def _triggered(
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]],
    uses: int,
    options: ClearToolUses,
    counter: TokenCounter,
) -> bool:
    if options.trigger_type == "tool_uses":
        return uses > options.trigger
    return count_request(messages, counter, tools=tools) > options.trigger


def _cleared(
    messages: Sequence[Message], chosen: Sequence[tuple[int, str]], options: ClearToolUses
) -> list[Message]:
    """``messages`` with the chosen results replaced (and their calls' inputs, if asked)."""
    out = list(messages)
    emptied: set[str] = set()
    for index, tool in chosen:
        out[index] = replace(messages[index], content=options.placeholder)
        if options.clears_input(tool):
            emptied.add(messages[index].tool_call_id or "")
    for index, message in enumerate(messages):
        if any(call.id in emptied for call in message.tool_calls):
            calls = tuple(
                ToolCall(c.id, c.name, {}) if c.id in emptied else c for c in message.tool_calls
            )
            out[index] = replace(message, tool_calls=calls)
    return out
