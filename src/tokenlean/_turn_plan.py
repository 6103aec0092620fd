"""One turn planned (:func:`plan_turn`): its answered inputs cut, then its new results shortened
at first sight; and, for a way in that can list the retrieval tool from any call on, whether
this turn is the one to list it (:func:`plan_offered_turn`). See :mod:`tokenlean.pipeline`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from tokenlean.cost import floor_pays
from tokenlean.readback import ReadBack, has_way_back
from tokenlean.shorten import (
    FirstSightPlan,
    InputPlan,
    InputShorteningSettings,
    OutputShorteningSettings,
    SeenLog,
    plan_first_sight,
    plan_inputs,
)
from tokenlean.tokens import DEFAULT_COUNTER, message_tokens
from tokenlean.transcript import Edit, Message, ToolCall

__all__ = [
    "OfferedTurn",
    "TurnPlan",
    "plan_offered_turn",
    "plan_turn",
    "saved_tokens",
    "with_args",
]


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
                current[edit.index - offset] = with_args(current[edit.index - offset], edit)
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


def with_args(message: Message, edit: Edit) -> Message:
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
