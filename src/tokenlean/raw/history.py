"""First-sight shortening of a whole history, as a pure function of the history.

A client that speaks a provider API directly re-sends the raw history on every request. To keep
the provider's prompt cache hitting, each message must be rewritten the same way every time it is
sent: :func:`plan_history` rewrites message *i* from messages ``0..i`` and the policy alone (a
past call's inputs also look at whether the results that follow it answer it; they do from the
first request that sends the call back). So every tool result is shortened as at first sight,
given everything before it as the model saw it, and every answered call's long inputs are cut
before the turn is first sent back: the same decisions the LangChain middleware makes, without
any state.

All calls into the shortening core live in this module (a later home: the core itself).
Requests grow by a few messages at a time, so the walk is memoised (:mod:`tokenlean.raw.memo`):
after each plan, a checkpoint keyed by a rolling hash of the history and the policy keeps the
edits, the lines already shown and the calls seen; the next request resumes from the longest
history it shares with a checkpoint. The memo is only a cache: a cold process plans the same
bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from tokenlean.arguments import ArgumentPolicy, marker, shorten_arguments
from tokenlean.raw.memo import Checkpoint, Memo, prefix_digests
from tokenlean.raw.originals import original_path
from tokenlean.shorten.core import shorten
from tokenlean.shorten.firstsight import add_visible, handle_for
from tokenlean.shorten.markers import Retrieval
from tokenlean.shorten.options import ShortenOptions
from tokenlean.shorten.seen import Seen
from tokenlean.shorten.text import estimate_tokens
from tokenlean.tokens import EstimateCounter, TokenCounter, message_tokens
from tokenlean.transcript import Message, ToolCall

#: Checkpoints kept (each holds only what its requests added; see the module docstring).
MEMO_ENTRIES = 256
#: The tool the middleware's markers name; the raw rewrite turns those hints into file paths.
MARKER_TOOL = "read_original"


@dataclass(frozen=True, slots=True)
class HistoryPolicy:
    """How :func:`plan_history` shortens (every field is set by the caller's settings).

    ``inputs`` ``None`` leaves past inputs alone; ``originals_dir`` ``None`` keeps no originals
    (markers then give line numbers only, and inputs are not cut: nothing could show them).
    """

    min_tokens: int
    options: ShortenOptions
    dedupe: bool
    min_saving: float
    only: frozenset[str] | None
    never: frozenset[str]
    inputs: ArgumentPolicy | None
    never_inputs: frozenset[str]
    originals_dir: Path | None
    counter: TokenCounter | None


@dataclass(frozen=True, slots=True)
class Kept:
    """An original to keep at ``path`` (content-addressed) so the markers can point to it."""

    path: Path
    text: str


@dataclass(frozen=True, slots=True)
class HistoryEdit:
    """One message's rewrite: a tool result's new ``text`` (``kind="output"``), or an assistant
    turn's calls with new arguments, by call id (``kind="input"``)."""

    index: int
    kind: Literal["output", "input"]
    text: str | None
    args: Mapping[str, Mapping[str, Any]]
    tokens_before: int
    tokens_after: int
    originals: tuple[Kept, ...]


@dataclass(frozen=True, slots=True)
class HistoryPlan:
    """Every edit for a history, and the tokens of its messages before and after them."""

    edits: tuple[HistoryEdit, ...]
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, slots=True)
class _Call:
    name: str
    args: Mapping[str, Any]  # as the model sees them (cut when they were cut)
    note: str  # the calling turn's text: what the agent said it was looking for


@dataclass
class _Walk:
    """The running state of one plan: lines shown so far, calls made so far, and the new part."""

    policy: HistoryPolicy
    seen: Seen | None
    calls: dict[str, _Call]
    new_lines: Seen = field(default_factory=Seen)
    new_calls: dict[str, _Call] = field(default_factory=dict)
    new_edits: list[HistoryEdit] = field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0


def plan_history(view: Sequence[Message], policy: HistoryPolicy) -> HistoryPlan:
    """The edits that shorten ``view`` (tool results and answered calls' inputs), in order."""
    answered = _answered(view)
    digests = prefix_digests(view, answered)
    start, base = _MEMO.resume(policy, digests)
    walk = _resume(policy, base)
    for i in range(start, len(view)):
        _plan_message(walk, view[i], i, answered[i])
    node: Checkpoint[HistoryEdit, _Call] = Checkpoint(
        parent=base,
        end=len(view),
        edits=tuple(walk.new_edits),
        lines=frozenset(walk.new_lines.lines),
        calls=walk.new_calls,
        tokens_before=walk.tokens_before,
        tokens_after=walk.tokens_after,
    )
    if start < len(view):
        _MEMO.put(policy, digests[-1], node)
    chain = node.chain()
    return HistoryPlan(
        edits=tuple(edit for n in chain for edit in n.edits),
        tokens_before=sum(n.tokens_before for n in chain),
        tokens_after=sum(n.tokens_after for n in chain),
    )


def clear_memo() -> None:
    """Forget every checkpoint (tests use it to show a cold plan equals a warm one)."""
    _MEMO.clear()


# -- one message -----------------------------------------------------------------------------


def _plan_message(walk: _Walk, message: Message, index: int, answered: frozenset[str]) -> None:
    edit: HistoryEdit | None = None
    if message.role == "assistant":
        edit = _cut_inputs(walk.policy, message, index, answered)
        args = edit.args if edit is not None else {}
        for call in message.tool_calls:
            if call.id:
                seen_call = _Call(call.name, args.get(call.id, call.args), message.text)
                walk.calls[call.id] = walk.new_calls[call.id] = seen_call
    elif message.role == "tool":
        edit = _shorten_result(walk, message, index)
    visible = message if edit is None else _edited(message, edit)
    if walk.seen is not None:
        add_visible(walk.seen, [visible])
        add_visible(walk.new_lines, [visible])
    count = _count_of(walk.policy)
    tokens = message_tokens(message, count)
    walk.tokens_before += tokens
    walk.tokens_after += tokens if edit is None else message_tokens(visible, count)
    if edit is not None:
        walk.new_edits.append(edit)


def _edited(message: Message, edit: HistoryEdit) -> Message:
    if edit.text is not None:
        return replace(message, content=edit.text)
    calls = tuple(
        ToolCall(c.id, c.name, edit.args[c.id]) if c.id in edit.args else c
        for c in message.tool_calls
    )
    return replace(message, tool_calls=calls)


def _shorten_result(walk: _Walk, message: Message, index: int) -> HistoryEdit | None:
    policy = walk.policy
    call = walk.calls.get(message.tool_call_id or "")
    name = call.name if call is not None else ""
    if not message.is_text_only or name in policy.never:
        return None
    if policy.only is not None and name not in policy.only:
        return None
    text = message.text
    count = policy.counter.count if policy.counter is not None else estimate_tokens
    if count(text) <= policy.min_tokens:
        return None
    # The cut is decided with the middleware's markers (the defaults were tuned on them), and
    # the markers then point into the originals file instead of naming a tool.
    handle = handle_for(message)
    keep = policy.originals_dir is not None
    report = shorten(
        text,
        query=call.args if call is not None else None,
        context=call.note if call is not None else None,
        seen=walk.seen,
        retrieval=Retrieval(handle, MARKER_TOOL) if keep else Retrieval(),
        counter=policy.counter,
        options=policy.options,
    )
    if not report.changed or report.tokens_saved < policy.min_saving * report.tokens_before:
        return None
    if policy.originals_dir is None:
        return HistoryEdit(
            index, "output", report.text, {}, report.tokens_before, report.tokens_after, ()
        )
    path = original_path(policy.originals_dir, text)
    short = point_to_file(report.text, handle, str(path))
    return HistoryEdit(
        index, "output", short, {}, report.tokens_before, count(short), (Kept(path, text),)
    )


def point_to_file(text: str, handle: str, path: str) -> str:
    """``text`` with each ``read_original("<handle>", "a-b")`` marker hint pointing into ``path``.

    The first names the file (``full output: /path lines a-b``); later ones only give lines
    (``full output lines a-b``): a path costs about fifteen tokens, and a shortened result may
    have a dozen markers into the same file. Hints inside JSON strings have escaped quotes, and
    get an escaped path.
    """
    hint = re.compile(
        rf'{MARKER_TOOL}\((\\?)"{re.escape(handle)}\1"(?:, \1"(\d+)(?:-(\d+))?\1")?\)'
    )
    named = False

    def where(match: re.Match[str]) -> str:
        nonlocal named
        escaped = json.dumps(path, ensure_ascii=False)[1:-1] if match[1] else path
        head = "full output" if named else f"full output: {escaped}"
        named = True
        if match[2] is None:
            return head
        return f"{head} lines {match[2]}-{match[3]}" if match[3] else f"{head} line {match[2]}"

    return hint.sub(where, text)


def _cut_inputs(
    policy: HistoryPolicy, message: Message, index: int, answered: frozenset[str]
) -> HistoryEdit | None:
    """The turn's answered calls with long string inputs cut to head and tail lines."""
    if policy.inputs is None or policy.originals_dir is None or not message.tool_calls:
        return None
    ids = [call.id for call in message.tool_calls]
    if len(set(ids)) < len(ids):  # results could not be told apart: leave the turn alone
        return None
    new_args: dict[str, Mapping[str, Any]] = {}
    kept: list[Kept] = []
    before = after = 0
    for call in message.tool_calls:
        if call.name in policy.never_inputs or call.id not in answered:
            continue
        cut = _cut_call(policy.inputs, policy.originals_dir, call, policy.counter)
        if cut is not None:
            new_args[call.id] = cut[0]
            kept += cut[1]
            before, after = before + cut[2], after + cut[3]
    if not new_args:
        return None
    return HistoryEdit(index, "input", None, new_args, before, after, tuple(kept))


def _cut_call(
    inputs: ArgumentPolicy, directory: Path, call: ToolCall, counter: TokenCounter | None
) -> tuple[dict[str, Any], list[Kept], int, int] | None:
    count = counter or _INPUT_COUNTER
    args, cuts = shorten_arguments(call.id, call.args, policy=inputs, counter=count)
    kept: list[Kept] = []
    before = after = 0
    for cut in cuts:
        path = original_path(directory, cut.original)
        text = _point_to_file(args[cut.key], cut.original, cut.handle, path, inputs)
        if text is None:  # the marker is not where the policy puts it: keep this input whole
            args[cut.key] = call.args[cut.key]
            continue
        args[cut.key] = text
        kept.append(Kept(path, cut.original))
        before, after = before + cut.tokens_before, after + count.count(text)
    return (args, kept, before, after) if kept else None


def _point_to_file(
    text: str, original: str, handle: str, path: Path, inputs: ArgumentPolicy
) -> str | None:
    """``text`` with the input marker naming the file and line range of the omitted lines.

    :func:`~tokenlean.arguments.shorten_arguments` marks the cut with a handle; a proxy offers
    no tool to read it, so the marker says where the agent's own file tools find those lines.
    """
    lines = text.split("\n")
    omitted = original.count("\n") + 1 - inputs.head_lines - inputs.tail_lines
    head = inputs.head_lines
    if head >= len(lines) or lines[head] != marker(omitted, handle, None):
        return None
    lines[head] = (
        f"[... {omitted} lines of this input omitted after the call ran; "
        f"full input: {path} lines {head + 1}-{head + omitted} ...]"
    )
    return "\n".join(lines)


# -- the walk's state ------------------------------------------------------------------------


def _answered(view: Sequence[Message]) -> list[frozenset[str]]:
    """For each assistant turn, the ids of the tool results that follow it (before the next
    turn); empty for every other message."""
    out: list[frozenset[str]] = [frozenset()] * len(view)
    run: set[str] = set()
    for i in range(len(view) - 1, -1, -1):
        message = view[i]
        if message.role == "assistant":
            out[i] = frozenset(run)
            run = set()
        elif message.role == "tool" and message.tool_call_id:
            run.add(message.tool_call_id)
    return out


def _resume(policy: HistoryPolicy, base: Checkpoint[HistoryEdit, _Call] | None) -> _Walk:
    min_chars = policy.options.seen_min_chars
    seen = Seen(min_chars=min_chars) if policy.dedupe else None
    calls: dict[str, _Call] = {}
    for node in base.chain() if base is not None else ():
        if seen is not None:
            seen.lines |= node.lines
        calls.update(node.calls)
    return _Walk(policy, seen, calls, new_lines=Seen(min_chars=min_chars))


class _Estimate:
    """The shortener's own fast estimate as a :class:`~tokenlean.tokens.TokenCounter`."""

    def count(self, text: str) -> int:
        return estimate_tokens(text)


_ESTIMATE = _Estimate()
_INPUT_COUNTER = EstimateCounter()  # what the input-shortening middleware counts with
_MEMO: Memo[HistoryPolicy, HistoryEdit, _Call] = Memo(MEMO_ENTRIES)


def _count_of(policy: HistoryPolicy) -> TokenCounter:
    return policy.counter if policy.counter is not None else _ESTIMATE
