"""Planning which results to clear: whole batches of the oldest eligible results, never fewer."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from tokenlean.context_editor.cache import CacheModel
from tokenlean.context_editor.config import (
    ClearedToolResult,
    Clearing,
    ContextEdit,
    ContextEditorConfig,
    RequestView,
    TokenEstimator,
    request_estimator,
)
from tokenlean.shorten.firstsight import CAPABILITY as SHORTENED
from tokenlean.tokens import EstimateCounter, TokenCounter, message_tokens
from tokenlean.transcript import Edit, Message, ToolCall, mark_of

#: How a cleared result is marked, the way LangChain's own context editing marks one (so that
#: editor leaves it alone too).
STRATEGY = "tokenlean_context_editor"
CLEARED_MARK = {"context_editing": {"cleared": True, "strategy": STRATEGY}}


def apply_clearing(messages: Sequence[Message], cleared: Mapping[str, Clearing]) -> list[Message]:
    """The messages with cleared results replaced (and their calls' arguments emptied)."""
    out: list[Message] = []
    for message in messages:
        call_id = message.tool_call_id or ""
        if message.role == "tool" and call_id in cleared:
            message = replace(message, content=cleared[call_id].placeholder)
        elif message.tool_calls and any(_clears_input(c, cleared) for c in message.tool_calls):
            calls = tuple(
                ToolCall(c.id, c.name, {}) if _clears_input(c, cleared) else c
                for c in message.tool_calls
            )
            message = replace(message, tool_calls=calls)
        out.append(message)
    return out


def clearing_edits(
    messages: Sequence[Message], cleared: Mapping[str, Clearing], *, offset: int = 0
) -> list[Edit]:
    """The edits that send ``messages`` with the cleared results (and inputs) replaced."""
    edits: list[Edit] = []
    if not cleared:
        return edits
    for index, message in enumerate(messages):
        call_id = message.tool_call_id or ""
        if message.role == "tool" and call_id in cleared:
            text = cleared[call_id].placeholder
            edits.append(
                Edit(offset + index, message.id, text, "cleared", 0, 0, metadata=CLEARED_MARK)
            )
        elif message.tool_calls and any(_clears_input(c, cleared) for c in message.tool_calls):
            args: dict[str, Mapping[str, object]] = {
                c.id: {} for c in message.tool_calls if _clears_input(c, cleared)
            }
            edits.append(Edit(offset + index, message.id, None, "cleared inputs", 0, 0, args))
    return edits


def _clears_input(call: ToolCall, cleared: Mapping[str, Clearing]) -> bool:
    entry = cleared.get(call.id)
    return entry is not None and entry.clear_inputs


@dataclass(frozen=True, slots=True)
class _Result:
    index: int
    call: ToolCall
    length: int
    saved: int
    clearing: Clearing


@dataclass(frozen=True, slots=True)
class ClearingPlan:
    """The cleared set for this call (earlier entries first) and the edit that grew it, if any."""

    cleared: Mapping[str, Clearing] = field(default_factory=dict)
    edit: ContextEdit | None = None


def _calls(messages: Sequence[Message]) -> dict[str, ToolCall]:
    """Tool calls by id, leaving out ids that are missing or used twice (ambiguous pairing)."""
    seen: dict[str, ToolCall] = {}
    twice: set[str] = set()
    for message in messages:
        for call in message.tool_calls:
            if call.id in seen:
                twice.add(call.id)
            seen[call.id] = call
    return {key: call for key, call in seen.items() if key and key not in twice}


def _results(messages: Sequence[Message]) -> list[int]:
    """Indices of tool results whose call id is used by exactly one result."""
    uses = Counter(m.tool_call_id for m in messages if m.role == "tool")
    return [
        i
        for i, m in enumerate(messages)
        if m.role == "tool" and m.tool_call_id and uses[m.tool_call_id] == 1
    ]


def plan_clearing(
    request: RequestView,
    *,
    config: ContextEditorConfig,
    previous: Mapping[str, Clearing],
    skip: frozenset[str] = frozenset(),
    estimate: TokenEstimator | None = None,
    counter: TokenCounter | None = None,
) -> ClearingPlan:
    """The cleared set for ``request``: every earlier clearing, plus new whole batches if due.

    ``skip`` holds tool call ids cleared by someone else (never cleared twice); ``counter``
    sizes single results (for ``min_saved_tokens`` and the cache model), ``estimate`` the request.
    """
    estimate = estimate or request_estimator(counter)
    counter = counter or EstimateCounter()
    messages = request.messages
    tool_results = [i for i, m in enumerate(messages) if m.role == "tool"]
    present = {m.tool_call_id for m in messages if m.role == "tool"}
    cleared = {key: value for key, value in previous.items() if key in present}
    current = replace(request, messages=tuple(apply_clearing(messages, cleared)))
    before = estimate(current)
    if before <= config.trigger_tokens:
        return ClearingPlan(cleared)
    kept = set(tool_results[max(0, len(tool_results) - config.keep) :]) if config.keep else set()
    retrieval = config.retrieval_tool is not None and config.retrieval_tool in _tool_names(request)
    calls = _calls(messages)
    candidates = [
        result
        for index in _results(messages)
        if index not in kept and messages[index].tool_call_id not in cleared
        if (result := _candidate(messages[index], index, calls, skip, config, counter, retrieval))
    ]
    return _grow(current, cleared, candidates, before, config, estimate, counter)


def _tool_names(request: RequestView) -> set[str]:
    names: set[str] = set()
    for tool in request.tools:
        function = tool.get("function")
        name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
        if isinstance(name, str):
            names.add(name)
    return names


def _candidate(
    message: Message,
    index: int,
    calls: Mapping[str, ToolCall],
    skip: frozenset[str],
    config: ContextEditorConfig,
    counter: TokenCounter,
    retrieval: bool,
) -> _Result | None:
    call = calls.get(message.tool_call_id or "")
    if call is None or call.id in skip or not message.is_text_only:
        return None
    tool = call.name or message.name or "tool"
    if {tool, message.name or tool} & config.exclude_tools:
        return None
    length = len(message.text)
    shortened = mark_of(message, SHORTENED)
    handle = shortened.get("handle") if shortened is not None else None
    where = handle if isinstance(handle, str) else call.id  # a shortened result's original
    placeholder = config.placeholder_for(tool, length, where, retrieval)
    saved = message_tokens(message, counter) - message_tokens(
        replace(message, content=placeholder), counter
    )
    if config.clear_tool_inputs and call.args:
        saved += counter.count(json.dumps(call.args, ensure_ascii=False, default=str)) - 1
    if saved < max(config.min_saved_tokens, 1):
        return None
    return _Result(index, call, length, saved, Clearing(placeholder, config.clear_tool_inputs))


def _grow(
    current: RequestView,
    cleared: dict[str, Clearing],
    candidates: Sequence[_Result],
    before: int,
    config: ContextEditorConfig,
    estimate: TokenEstimator,
    counter: TokenCounter,
) -> ClearingPlan:
    """Add the chosen whole batches to the cleared set, and report the edit."""
    chosen, net = _choose(current, candidates, config, counter)
    if not chosen:
        return ClearingPlan(cleared)
    grown = {**cleared, **{r.call.id: r.clearing for r in chosen}}
    after = estimate(replace(current, messages=tuple(apply_clearing(current.messages, grown))))
    report = tuple(ClearedToolResult(r.call.name, r.length, r.call.id, r.saved) for r in chosen)
    edit = ContextEdit(report, len(chosen) // config.batch, before, after, len(grown), net)
    return ClearingPlan(grown, edit)


def _choose(
    current: RequestView,
    candidates: Sequence[_Result],
    config: ContextEditorConfig,
    counter: TokenCounter,
) -> tuple[list[_Result], float | None]:
    """Plain: every whole batch, oldest first. Cache-aware: the newest ``k`` that pay the most.

    Clearing the newest ``k`` batches puts the edit point at the oldest of them, so a small ``k``
    is a cheap re-write near the end of the prompt and a large one saves more; the model picks the
    ``k`` with the largest expected net saving, or nothing when none is positive.
    """
    size = config.batch
    usable = list(candidates[: len(candidates) - len(candidates) % size])
    if config.mode == "plain" or not usable:
        return usable, None
    model = CacheModel.of(current, config, counter)
    best = 0
    best_net = 0.0
    saved = 0
    for k in range(1, len(usable) // size + 1):
        batch = usable[len(usable) - k * size : len(usable) - (k - 1) * size]
        saved += sum(r.saved for r in batch)
        net = model.net(edit_point=batch[0].index, saved=saved)
        if net > best_net:
            best, best_net = k, net
    return usable[len(usable) - best * size :] if best else [], (best_net if best else None)
