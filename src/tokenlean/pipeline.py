"""The planner of a turn, which every way in calls: the one place that decides what is sent.

Every way in translates its messages to the neutral view (:class:`~tokenlean.transcript.Message`),
has them planned here, and translates the edits back: the ways in that re-send a whole history
(the raw provider bodies behind the proxy, the SDK wrappers and LiteLLM; pydantic-ai; AgentScope)
through :class:`Planner`, by way of :func:`tokenlean.history.rewrite_history`; LangChain's
middleware, whose agent state keeps the edited history and which may list the retrieval tool
from any call on, one call at a time through :func:`plan_offered_turn`, by way of
:func:`tokenlean.turn.rewrite_turn`. Both run :func:`plan_turn` on each turn.
A *turn* is an assistant message with what came since the turn before it and the tool results
that answer it. :func:`plan_turn` first cuts the turn's answered inputs
(:func:`~tokenlean.shorten._inputs.plan_inputs`), then shortens its new results against
everything before them (:func:`~tokenlean.shorten._firstsight.plan_first_sight`): in that order,
so the output shortener never points at lines of an input that the model will no longer see. A
:class:`~tokenlean.readback.ReadBack` names the originals' handles and says how markers point
to them; a :class:`~tokenlean.shorten._firstsight.SeenLog` carries the lines already shown.

A client that re-sends its whole history on every request is planned by :class:`Planner`, as a
pure function of that history: message *i* from messages ``0..i`` and the policy alone, one
turn at a time (a past call's inputs also look at whether the results that follow it answer
it). Every tool result is shortened as at first sight and every answered call's long inputs are
cut before the turn is first sent back: the decisions the middleware makes, without any state.
Requests grow by a few messages at a time, so the walk is memoised by content
(:mod:`tokenlean._checkpoints`): a request resumes from the longest history it shares with an
earlier one, whichever way it came in. The memo is only a cache: a cold process plans the same
bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tokenlean._cancel import stop_if_cancelled
from tokenlean._checkpoints import Checkpoint, Memo, prefix_digests
from tokenlean.cost import floor_pays
from tokenlean.readback import ReadBack, has_way_back
from tokenlean.shorten import (
    FirstSightPlan,
    InputPlan,
    InputShorteningSettings,
    OutputShorteningSettings,
    Seen,
    SeenLog,
    add_visible,
    plan_first_sight,
    plan_inputs,
    readable,
)
from tokenlean.store import Original
from tokenlean.tokens import DEFAULT_COUNTER, MESSAGE_OVERHEAD, TokenCounter, message_tokens
from tokenlean.transcript import Edit, Message, ToolCall

__all__ = [
    "HistoryEdit",
    "HistoryPlan",
    "OfferedTurn",
    "Planner",
    "PlannerSettings",
    "TurnPlan",
    "plan_offered_turn",
    "plan_turn",
    "saved_tokens",
]

#: Checkpoints a planner keeps (each holds only what its requests added).
MEMO_ENTRIES = 256


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """What :func:`plan_turn` decided: the turn's inputs cut, then its new results shortened
    (their markers in their final words)."""

    inputs: InputPlan = field(default_factory=InputPlan)
    outputs: FirstSightPlan = field(default_factory=FirstSightPlan)


def plan_turn(
    window: Sequence[Message],
    *,
    offset: int = 0,
    inputs: InputShorteningSettings | None = None,
    outputs: OutputShorteningSettings | None = None,
    log: SeenLog | None = None,
    read_back: ReadBack | None = None,
    backoff: Mapping[str, int] | None = None,
    before: int = 0,
) -> TurnPlan:
    """Plan the newest turn of ``window`` (the transcript from position ``offset`` on).

    ``inputs`` cuts the turn's answered inputs (only with a way back,
    :func:`~tokenlean.readback.has_way_back`: nothing could show them otherwise); ``outputs``
    then shortens the results that follow it, seeing the inputs as cut. ``log``, ``backoff``
    and the window's bounds are as for
    :func:`~tokenlean.shorten._firstsight.plan_first_sight`. ``before``: the tokens the way
    in counted of the prompt ahead of the window (at least that many; 0 when it counts none).
    A turn whose cuts may take the prompt under the provider's minimum cacheable length is
    sent whole unless the cuts pay for that (:func:`~tokenlean.cost.floor_pays`).
    """
    cut, current = _NO_INPUTS, window
    if inputs is not None and read_back is not None and has_way_back(read_back):
        cut = plan_inputs(window, inputs, offset=offset, read_back=read_back)
        if cut.edits:
            current = list(window)
            for edit in cut.edits:
                current[edit.index - offset] = _with_args(current[edit.index - offset], edit)
    if outputs is None:
        return TurnPlan(cut, _NO_OUTPUTS)
    shown = plan_first_sight(
        current, outputs, offset=offset, log=log, read_back=read_back, backoff=backoff
    )
    if read_back is not None and shown.edits:
        shown = _finished(shown, read_back, outputs)
    plan = TurnPlan(cut, shown)
    if before < outputs.pricing.min_cached and (cut.edits or shown.edits):
        return _over_floor(plan, window, outputs, before)
    return plan


def _over_floor(
    plan: TurnPlan, window: Sequence[Message], outputs: OutputShorteningSettings, before: int
) -> TurnPlan:
    """``plan``, or the turn left whole (the lines log kept) when its cuts may take the
    prompt under the minimum cacheable length and do not pay for it."""
    saved = saved_tokens(plan)
    count = outputs.counter or DEFAULT_COUNTER
    after = before + sum(message_tokens(m, count) for m in window) - saved
    if floor_pays(outputs.pricing, saved=saved, after=after):
        return plan
    return TurnPlan(_NO_INPUTS, FirstSightPlan(log=plan.outputs.log))


_NO_INPUTS = InputPlan()
_NO_OUTPUTS = FirstSightPlan()


@dataclass(frozen=True, slots=True)
class OfferedTurn:
    """:func:`plan_offered_turn`'s answer: the plan to send; ``offer``: its markers name the
    retrieval tool, which the request must list from this call on; ``forgone``: what the cuts
    that need the tool would have saved, not made as it is not listed (0 when offered)."""

    plan: TurnPlan
    offer: bool = False
    forgone: int = 0


def plan_offered_turn(
    window: Sequence[Message],
    *,
    offset: int,
    inputs: InputShorteningSettings | None,
    outputs: OutputShorteningSettings | None,
    log: SeenLog | None,
    read_back: ReadBack,
    backoff: Mapping[str, int] | None,
    listed: bool,
    offer_pays: Callable[[TurnPlan, int], bool] | None,
    before: int = 0,
) -> OfferedTurn:
    """:func:`plan_turn` for a way in that can list the retrieval tool from any call on
    (LangChain's middleware). Markers name ``read_back``'s tool only in a request that lists
    it (``listed``); else only what needs no way back is cut, unless the cuts that name it,
    ``extra`` tokens more, pay for listing it from this call on: ``offer_pays(without,
    extra)`` says so (the way in's measure of its prompt under a rule of :mod:`tokenlean.cost`;
    ``None``: it never joins here). ``before`` is as for :func:`plan_turn`."""

    def planned(way_back: ReadBack | None) -> TurnPlan:
        return plan_turn(
            window,
            offset=offset,
            inputs=inputs,
            outputs=outputs,
            log=log,
            read_back=way_back,
            backoff=backoff,
            before=before,
        )

    if listed:
        return OfferedTurn(planned(read_back))
    without = planned(None)
    if offer_pays is None or read_back.tool is None:
        return OfferedTurn(without)
    with_tool = planned(read_back)
    extra = saved_tokens(with_tool) - saved_tokens(without)
    if extra > 0 and offer_pays(without, extra):
        return OfferedTurn(with_tool, offer=True)
    return OfferedTurn(without, forgone=max(0, extra))


def saved_tokens(turn: TurnPlan) -> int:
    """The tokens a turn's plan removes (its inputs' cuts and its results' shortenings)."""
    return sum(e.tokens_before - e.tokens_after for e in (*turn.inputs.edits, *turn.outputs.edits))


def _with_args(message: Message, edit: Edit) -> Message:
    calls = tuple(
        ToolCall(c.id, c.name, edit.tool_args[c.id]) if c.id in edit.tool_args else c
        for c in message.tool_calls
    )
    return replace(message, tool_calls=calls)


def _finished(
    plan: FirstSightPlan, read_back: ReadBack, policy: OutputShorteningSettings
) -> FirstSightPlan:
    """``plan`` with each shortened text's markers in the read-back's final words."""
    edits: list[Edit] = []
    for edit, original, report in zip(plan.edits, plan.originals, plan.reports, strict=True):
        text = read_back.finish(report.text, original)
        if text != report.text:
            content = text if isinstance(edit.new_content, str) else _blocks(text)
            edit = replace(edit, new_content=content, tokens_after=policy.count(text))
        edits.append(edit)
    return replace(plan, edits=tuple(edits))


def _blocks(text: str) -> tuple[Mapping[str, Any], ...]:
    return ({"type": "text", "text": text},)


# -- a whole history -------------------------------------------------------------------------


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
            current[cut.edit.index] = _with_args(current[cut.edit.index], cut.edit)
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
