"""First-sight shortening of a whole history, as a pure function of the history.

A client that speaks a provider API directly re-sends the raw history on every request. To keep
the provider's prompt cache hitting, each message must be rewritten the same way every time it is
sent: :func:`plan_history` rewrites message *i* from messages ``0..i`` and the policy alone (a
past call's inputs also look at whether the results that follow it answer it; they do from the
first request that sends the call back). So every tool result is shortened as at first sight,
given everything before it as the model saw it, and every answered call's long inputs are cut
before the turn is first sent back: the same decisions the LangChain middleware makes, without
any state.

The decisions are the core's, called as the middleware calls them, one assistant turn at a time:
:func:`tokenlean.shorten.inputs.plan_inputs` cuts the turn's answered inputs, then
:func:`tokenlean.shorten.firstsight.plan_first_sight` shortens its results against everything
before them (a :class:`~tokenlean.shorten.firstsight.SeenLog` carries the lines shown). This
module only turns their markers into file paths and keeps the originals' files. Requests grow by
a few messages at a time, so the walk is memoised (:mod:`tokenlean.raw.memo`): after each plan, a
checkpoint keyed by a rolling hash of the history and the policy keeps the edits and the lines
already shown; the next request resumes from the longest history it shares with a checkpoint.
The memo is only a cache: a cold process plans the same bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from tokenlean.raw.memo import Checkpoint, Memo, prefix_digests
from tokenlean.raw.originals import original_path
from tokenlean.shorten.firstsight import (
    OutputShorteningPolicy,
    SeenLog,
    add_visible,
    plan_first_sight,
)
from tokenlean.shorten.inputs import ArgumentPolicy, InputPlan, marker, plan_inputs
from tokenlean.shorten.options import ShortenOptions
from tokenlean.shorten.seen import Seen
from tokenlean.shorten.text import estimate_tokens
from tokenlean.shorten.wrapped import readable
from tokenlean.tokens import EstimateCounter, TokenCounter, message_tokens
from tokenlean.transcript import Edit, Message, ToolCall

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


def plan_history(view: Sequence[Message], policy: HistoryPolicy) -> HistoryPlan:
    """The edits that shorten ``view`` (tool results and answered calls' inputs), in order."""
    answered = _answered(view)
    digests = prefix_digests(view, answered)
    start, base = _MEMO.resume(policy, digests)
    shown = Seen(min_chars=policy.options.seen_min_chars)
    for earlier in base.chain() if base is not None else ():
        shown.lines |= earlier.lines
        for digest, call_id in earlier.results.items():
            shown.add_result(digest, call_id)
    log = SeenLog(Seen(min_chars=shown.min_chars, parent=shown), start)  # new lines apart
    current = _named(view, start)
    edits = [e for turn in _turns(current, start) for e in _plan_turn(policy, current, turn, log)]
    add_visible(log.seen, current[log.upto :])
    count = _count_of(policy)
    node: Checkpoint[HistoryEdit, str] = Checkpoint(
        parent=base,
        end=len(view),
        edits=tuple(edits),
        lines=frozenset(log.seen.lines) if policy.dedupe else frozenset(),
        results=dict(log.seen.results) if policy.dedupe else {},
        tokens_before=sum(message_tokens(m, count) for m in view[start:]),
        tokens_after=sum(message_tokens(m, count) for m in current[start:]),
    )
    if start < len(view):
        _MEMO.put(policy, digests[-1], node)
    chain = node.chain()
    return HistoryPlan(
        edits=tuple(edit for n in chain for edit in n.edits),
        tokens_before=sum(n.tokens_before for n in chain),
        tokens_after=sum(n.tokens_after for n in chain),
    )


def _named(view: Sequence[Message], start: int) -> list[Message]:
    """The view with each tool result from ``start`` on named after its call (provider bodies
    do not name them). Planning reads nothing before ``start``, and naming every result of a
    long history again on each request would cost more than planning its new part."""
    names = {call.id: call.name for m in view for call in m.tool_calls}
    return [
        replace(m, name=names[m.tool_call_id])
        if i >= start and m.role == "tool" and not m.name and m.tool_call_id in names
        else m
        for i, m in enumerate(view)
    ]


def _turns(view: Sequence[Message], start: int) -> list[tuple[int, int, int]]:
    """``(window start, assistant turn, window end)`` for each turn from ``start`` on: a window
    holds what came since the previous turn, the turn, and the results that answer it."""
    turns = [i for i in range(start, len(view)) if view[i].role == "assistant"]
    if not turns:  # results whose calls the provider keeps (a Responses continuation)
        return [(start, -1, len(view))]
    starts = [start, *(a + 1 for a in turns[:-1])]
    ends = [*turns[1:], len(view)]
    return list(zip(starts, turns, ends, strict=True))


def _plan_turn(
    policy: HistoryPolicy, current: list[Message], turn: tuple[int, int, int], log: SeenLog
) -> list[HistoryEdit]:
    """Cut the turn's answered inputs, then shorten its results (as the middleware stack does),
    writing both into ``current``."""
    first, at, end = turn
    out: list[HistoryEdit] = []
    if at >= 0 and policy.inputs is not None and policy.originals_dir is not None:
        inputs = replace(policy.inputs, never=policy.inputs.never | policy.never_inputs)
        cut = plan_inputs(current[first:end], inputs, offset=first, retrieval_tool=None)
        edit = _input_edit(cut, current, policy.inputs, policy.originals_dir, policy.counter)
        if edit is not None:
            current[at] = _edited(current[at], edit)
            out.append(edit)
    plan = plan_first_sight(
        current[first:end],
        _output_policy(policy),
        offset=first,
        log=log if policy.dedupe else None,
        keep_originals=policy.originals_dir is not None,
        retrieval_tool=MARKER_TOOL,
    )
    for shortened, original in zip(plan.edits, plan.originals, strict=True):
        result = _output_edit(shortened, original.handle, original.text, policy)
        current[result.index] = replace(current[result.index], content=result.text or "")
        out.append(result)
    return out


def _output_policy(policy: HistoryPolicy) -> OutputShorteningPolicy:
    return OutputShorteningPolicy(
        min_tokens=policy.min_tokens,
        options=policy.options,
        only=policy.only,
        never=policy.never,
        dedupe=policy.dedupe,
        min_saving=policy.min_saving,
        tool_name=MARKER_TOOL,
        counter=policy.counter,
        orphans=True,
    )


def _output_edit(edit: Edit, handle: str, original: str, policy: HistoryPolicy) -> HistoryEdit:
    """A shortened result, its markers pointing into the original's file when one is kept."""
    text = edit.new_content if isinstance(edit.new_content, str) else _text(edit.new_content)
    if policy.originals_dir is None:
        return HistoryEdit(
            edit.index, "output", text, {}, edit.tokens_before, edit.tokens_after, ()
        )
    path = original_path(policy.originals_dir, original)
    short = point_to_file(text, handle, str(path))
    after = _count_of(policy).count(short)
    # the file holds the lines the markers count (a JSON envelope's text, unescaped)
    kept = Kept(path, readable(original))
    return HistoryEdit(edit.index, "output", short, {}, edit.tokens_before, after, (kept,))


def _text(content: object) -> str:
    blocks = content if isinstance(content, tuple) else ()
    return "\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, Mapping))


def _input_edit(
    plan: InputPlan,
    current: Sequence[Message],
    inputs: ArgumentPolicy,
    directory: Path,
    counter: TokenCounter | None,
) -> HistoryEdit | None:
    """The turn's cut inputs, each marker saying which file and lines hold what was cut."""
    if not plan.edits:
        return None
    edit = plan.edits[0]
    turn = current[edit.index]
    full = {call.id: call.args for call in turn.tool_calls}
    args = {key: dict(value) for key, value in edit.tool_args.items()}
    kept: list[Kept] = []
    before = after = 0
    count = counter or _INPUT_COUNTER
    for original, cut in zip(plan.originals, plan.cuts, strict=True):
        call_id = original.tool_call_id or ""
        path = original_path(directory, cut.original)
        text = _point_to_file(args[call_id][cut.key], cut.original, cut.handle, path, inputs)
        if text is None:  # the marker is not where the policy puts it: keep this input whole
            args[call_id][cut.key] = full[call_id][cut.key]
            continue
        args[call_id][cut.key] = text
        kept.append(Kept(path, cut.original))
        before, after = before + cut.tokens_before, after + count.count(text)
    changed = {k: v for k, v in args.items() if v != full[k]}
    if not changed:
        return None
    return HistoryEdit(edit.index, "input", None, changed, before, after, tuple(kept))


def clear_memo() -> None:
    """Forget every checkpoint (tests use it to show a cold plan equals a warm one)."""
    _MEMO.clear()


# -- one message -----------------------------------------------------------------------------


def _edited(message: Message, edit: HistoryEdit) -> Message:
    if edit.text is not None:
        return replace(message, content=edit.text)
    calls = tuple(
        ToolCall(c.id, c.name, edit.args[c.id]) if c.id in edit.args else c
        for c in message.tool_calls
    )
    return replace(message, tool_calls=calls)


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


def _point_to_file(
    text: str, original: str, handle: str, path: Path, inputs: ArgumentPolicy
) -> str | None:
    """``text`` with the input marker naming the file and line range of the omitted lines.

    :func:`~tokenlean.shorten.inputs.shorten_arguments` marks the cut with a handle; a proxy offers
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


class _Estimate:
    """The shortener's own fast estimate as a :class:`~tokenlean.tokens.TokenCounter`."""

    def count(self, text: str) -> int:
        return estimate_tokens(text)


_ESTIMATE = _Estimate()
_INPUT_COUNTER = EstimateCounter()  # what the input-shortening middleware counts with
_MEMO: Memo[HistoryPolicy, HistoryEdit, str] = Memo(MEMO_ENTRIES)


def _count_of(policy: HistoryPolicy) -> TokenCounter:
    return policy.counter if policy.counter is not None else _ESTIMATE
