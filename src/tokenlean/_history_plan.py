"""A whole history planned (:class:`Planner`) as a pure function of its messages, one turn at a
time, memoised by content: for the ways in that re-send a whole history on every request. See
:mod:`tokenlean.pipeline`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from tokenlean._cancel import stop_if_cancelled
from tokenlean._checkpoints import Checkpoint, Memo, prefix_digests
from tokenlean._turn_plan import plan_turn, with_args
from tokenlean.readback import ReadBack
from tokenlean.shorten import (
    InputPlan,
    InputShorteningSettings,
    OutputShorteningSettings,
    Seen,
    SeenLog,
    add_visible,
    readable,
)
from tokenlean.store import Original
from tokenlean.tokens import DEFAULT_COUNTER, MESSAGE_OVERHEAD, TokenCounter, message_tokens
from tokenlean.transcript import Edit, Message

__all__ = ["MEMO_ENTRIES", "HistoryEdit", "HistoryPlan", "Planner", "PlannerSettings"]

#: Checkpoints a planner keeps (each holds only what its requests added).
MEMO_ENTRIES = 256


@dataclass(frozen=True, slots=True)
class PlannerSettings:
    """How a :class:`Planner` shortens a history (every field is set by the caller's settings).

    ``inputs`` ``None`` leaves past inputs alone; ``read_back`` ``None`` keeps no originals
    (nothing could be read back: a result leaves out only what the prompt itself still shows,
    and inputs are not cut).
    """

    outputs: OutputShorteningSettings
    inputs: InputShorteningSettings | None
    read_back: ReadBack | None
    counter: TokenCounter | None


@dataclass(frozen=True, slots=True)
class HistoryEdit:
    """One message's :class:`~tokenlean.transcript.Edit` in a re-sent history (a tool result's
    new text, or an assistant turn's calls with new arguments by call id), with the originals
    its markers point to: a request body has no state to keep them in, so they are kept before
    the body names them."""

    edit: Edit
    originals: tuple[Original, ...]


@dataclass(frozen=True, slots=True)
class HistoryPlan:
    """Every edit for a history, and the tokens of its messages before and after them."""

    edits: tuple[HistoryEdit, ...]
    tokens_before: int
    tokens_after: int


@dataclass
class Planner:
    """Plans whole histories under one policy, memoised by content (see the module docstring).

    The memo belongs to the planner: whoever holds the planner (the proxy's settings, an SDK
    wrapper's) shares its work across requests; :meth:`forget` empties it.
    """

    policy: PlannerSettings
    entries: int = MEMO_ENTRIES
    _memo: Memo[PlannerSettings, HistoryEdit, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._memo = Memo(self.entries)

    def forget(self) -> None:
        """Drop every checkpoint (a cold plan equals a warm one; tests and benchmarks show it)."""
        self._memo.clear()

    def plan(self, view: Sequence[Message]) -> HistoryPlan:
        """The edits that shorten ``view`` (tool results and answered calls' inputs), in order."""
        policy = self.policy
        dedupe = policy.outputs.dedupe
        answered = _answered(view)
        digests = prefix_digests(view, answered)
        start, base = self._memo.resume(policy, digests)
        shown = Seen(min_chars=policy.outputs.options.seen_min_chars)
        for earlier in base.chain() if base is not None else ():
            shown.lines |= earlier.lines
            for digest, call_id in earlier.results.items():
                shown.add_result(digest, call_id)
        log = SeenLog(Seen(min_chars=shown.min_chars, parent=shown), start)  # new lines apart
        current = _named(view, start)
        ahead = _Ahead(
            policy.outputs.pricing.min_cached,
            policy.counter or DEFAULT_COUNTER,
            sum(n.tokens_after for n in base.chain()) if base is not None else 0,
            start,
        )
        edits = [
            e
            for turn in _turns(current, start)
            for e in self._turn(current, turn, log, ahead.upto(current, turn[0]))
        ]
        add_visible(log.seen, current[log.upto :])
        tokens_before, tokens_after = _tokens(view, current, start, edits, policy)
        node: Checkpoint[HistoryEdit, str] = Checkpoint(
            parent=base,
            end=len(view),
            edits=tuple(edits),
            lines=frozenset(log.seen.lines) if dedupe else frozenset(),
            results=dict(log.seen.results) if dedupe else {},
            tokens_before=tokens_before,
            tokens_after=tokens_after,
        )
        if start < len(view):
            self._memo.put(policy, digests[-1], node)
        chain = node.chain()
        return HistoryPlan(
            edits=tuple(edit for n in chain for edit in n.edits),
            tokens_before=sum(n.tokens_before for n in chain),
            tokens_after=sum(n.tokens_after for n in chain),
        )

    def _turn(
        self, current: list[Message], turn: tuple[int, int, int], log: SeenLog, before: int
    ) -> list[HistoryEdit]:
        """Plan one turn and write its edits into ``current`` (``before``: the tokens counted
        ahead of it)."""
        stop_if_cancelled()  # a way in whose client left stops here (tokenlean._cancel)
        first, _, end = turn
        policy = self.policy
        plan = plan_turn(
            current[first:end],
            offset=first,
            inputs=policy.inputs,
            outputs=policy.outputs,
            log=log if policy.outputs.dedupe else None,
            read_back=policy.read_back,
            before=before,
        )
        out: list[HistoryEdit] = []
        if plan.inputs.edits:
            cut = _input_edit(plan.inputs, policy.counter, policy.read_back)
            current[cut.edit.index] = with_args(current[cut.edit.index], cut.edit)
            out.append(cut)
        read_back = policy.read_back
        for shortened, original in zip(plan.outputs.edits, plan.outputs.originals, strict=True):
            text = _text(shortened.new_content)
            kept: tuple[Original, ...] = ()
            if read_back is not None:  # what the markers count the lines of
                kept = (read_back.keep(original, readable(original.text)),)
            out.append(HistoryEdit(replace(shortened, new_content=text), kept))
            current[shortened.index] = replace(current[shortened.index], content=text)
        return out


def _tokens(
    view: Sequence[Message],
    current: Sequence[Message],
    start: int,
    edits: Sequence[HistoryEdit],
    policy: PlannerSettings,
) -> tuple[int, int]:
    """The tokens of ``view[start:]`` and of ``current[start:]`` (the same messages as planned).

    A message no edit touched is counted once for both. A result shortened at first sight is
    not counted again: its edit holds the counts of its text before and after, made with this
    very counter on the way through the shortener (most of a long history's bytes are such
    results, so counting them again cost about a tenth of a cold plan)."""
    count = policy.counter or DEFAULT_COUNTER
    reuse = (policy.outputs.counter or DEFAULT_COUNTER) is count
    by_index = {h.edit.index: h.edit for h in edits}
    before = after = 0
    for i in range(start, len(view)):
        edit = by_index.get(i)
        if edit is None:
            tokens = message_tokens(view[i], count)
            before, after = before + tokens, after + tokens
        elif reuse and not edit.tool_args and not view[i].tool_calls:
            before += MESSAGE_OVERHEAD + edit.tokens_before
            after += MESSAGE_OVERHEAD + edit.tokens_after
        else:
            before += message_tokens(view[i], count)
            after += message_tokens(current[i], count)
    return before, after


@dataclass(slots=True)
class _Ahead:
    """The tokens of a history ahead of each turn, as sent, counted only while they may be
    under the minimum cacheable length ``floor`` (past it, no cut can cross it)."""

    floor: int
    counter: TokenCounter
    tokens: int
    counted: int

    def upto(self, current: Sequence[Message], end: int) -> int:
        """The tokens of ``current[:end]`` (messages before ``counted`` as counted earlier)."""
        while self.counted < end and self.tokens < self.floor:
            self.tokens += message_tokens(current[self.counted], self.counter)
            self.counted += 1
        return self.tokens


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, tuple) else ()
    return "\n".join(str(b.get("text", "")) for b in blocks if isinstance(b, Mapping))


def _input_edit(
    plan: InputPlan, counter: TokenCounter | None, read_back: ReadBack | None
) -> HistoryEdit:
    """The turn's cut inputs as a history edit (with the originals the markers point to)."""
    edit = plan.edits[0]
    count = counter or DEFAULT_COUNTER
    after = sum(
        count.count(edit.tool_args[o.tool_call_id or ""][cut.key])
        for o, cut in zip(plan.originals, plan.cuts, strict=True)
    )
    kept = tuple(read_back.keep(o, o.text) for o in plan.originals) if read_back else ()
    return HistoryEdit(replace(edit, tokens_after=after), kept)


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
