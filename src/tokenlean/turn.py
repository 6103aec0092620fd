"""The adapter contract of a way in that keeps the edited history in its own state, and the
function that runs one call's turn through it.

A framework whose agent state holds the history as the model was sent it (LangChain: a
shortened message is written back under its id) plans only what is new on each call: the
newest turn and the results that answer it (:func:`~tokenlean.pipeline.plan_offered_turn`).
Such a way in implements :class:`TurnAdapter` (read its messages from a position on as
neutral messages; write an edit onto one of its messages) and says what it knows of the
thread (:class:`TurnContext`: where the window starts, the lines already shown, how often each
tool's originals were read back, whether this request lists ``read_original``);
:func:`rewrite_turn` plans and applies, the same for every such adapter. Keeping the originals
the markers name, before the edits are committed to the state, is the adapter's (its store may
be written asynchronously); the ways in that re-send a whole history use
:func:`tokenlean.history.rewrite_history` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from tokenlean.pipeline import OfferedTurn, TurnPlan, plan_offered_turn, saved_tokens
from tokenlean.readback import ReadBack
from tokenlean.shorten import InputShorteningSettings, OutputShorteningSettings, SeenLog
from tokenlean.store import Original
from tokenlean.tokens import DEFAULT_COUNTER, message_tokens
from tokenlean.transcript import Edit, Message

__all__ = ["RewrittenTurn", "TurnAdapter", "TurnContext", "rewrite_turn"]

Native = TypeVar("Native")


class TurnAdapter(Protocol[Native]):
    """The contract: a way in translates, and decides nothing."""

    def views(self, messages: Sequence[Native], start: int) -> Sequence[Message]:
        """The neutral view of ``messages[start:]``."""
        ...

    def apply(self, message: Native, edit: Edit) -> Native:
        """``message`` with ``edit`` written onto it (a copy: every field it does not edit
        survives, and its id stays, so the state replaces the message)."""
        ...


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What a way in knows of its thread on this call: the window starts at ``start`` (the
    newest assistant turn, or earlier when ``log``, the lines shown before, does not reach
    it); ``backoff``: read-backs per tool; ``listed``: this request lists ``read_original``."""

    start: int
    log: SeenLog | None = None
    backoff: Mapping[str, int] | None = None
    listed: bool = False


@dataclass(frozen=True, slots=True)
class RewrittenTurn(Generic[Native]):
    """One call's turn planned and applied: ``chosen`` (the plan and whether its markers make
    the tool join now), the ``edits`` in order with the ``updated`` messages they made, and
    the history as the model will be ``sent`` it."""

    chosen: OfferedTurn
    edits: tuple[Edit, ...]
    updated: tuple[Native, ...]
    sent: Sequence[Native]

    @property
    def plan(self) -> TurnPlan:
        return self.chosen.plan

    @property
    def originals(self) -> tuple[Original, ...]:
        """What the markers point to: keep them before the edits are committed."""
        return (*self.plan.inputs.originals, *self.plan.outputs.originals)

    @property
    def saved(self) -> int:
        return saved_tokens(self.plan)


def rewrite_turn(
    adapter: TurnAdapter[Native],
    messages: Sequence[Native],
    context: TurnContext,
    *,
    inputs: InputShorteningSettings | None,
    outputs: OutputShorteningSettings | None,
    read_back: ReadBack,
    offer_pays: Callable[[Sequence[Native], int], bool] | None = None,
) -> RewrittenTurn[Native]:
    """Plan the newest turn of ``messages`` (its answered ``inputs``, then its new results
    under ``outputs``; either ``None``: left alone) and apply the edits. Markers name
    ``read_back``'s tool only when ``context.listed``, or when ``offer_pays(sent, extra)``
    says the cuts that name it (``extra`` tokens more than the history ``sent`` without them)
    pay for listing it from this call on (``None``: it never joins here)."""
    floor = outputs.pricing.min_cached if outputs is not None else 0
    chosen = plan_offered_turn(
        adapter.views(messages, context.start),
        offset=context.start,
        inputs=inputs,
        outputs=outputs,
        log=context.log,
        read_back=read_back,
        backoff=context.backoff,
        listed=context.listed,
        offer_pays=_measured(adapter, messages, offer_pays) if offer_pays else None,
        before=_ahead(adapter, messages[: context.start], floor, outputs) if floor else 0,
    )
    edits = _edits(chosen.plan)
    updated, sent = _applied(adapter, messages, edits)
    return RewrittenTurn(chosen, edits, updated, sent)


def _ahead(
    adapter: TurnAdapter[Native],
    messages: Sequence[Native],
    floor: int,
    outputs: OutputShorteningSettings | None,
) -> int:
    """The tokens of ``messages`` (those ahead of the window), counted until they reach
    ``floor``: past it no cut can take the prompt under the minimum cacheable length."""
    count = (outputs.counter if outputs is not None else None) or DEFAULT_COUNTER
    total = 0
    for i in range(len(messages)):
        if total >= floor:
            break
        total += sum(message_tokens(m, count) for m in adapter.views(messages[i : i + 1], 0))
    return total


def _measured(
    adapter: TurnAdapter[Native],
    messages: Sequence[Native],
    offer_pays: Callable[[Sequence[Native], int], bool],
) -> Callable[[TurnPlan, int], bool]:
    """``offer_pays`` asked of the history as sent with a plan's cuts (those needing no way
    back), as the planner asks it."""

    def pays(without: TurnPlan, extra: int) -> bool:
        return offer_pays(_applied(adapter, messages, _edits(without))[1], extra)

    return pays


def _edits(plan: TurnPlan) -> tuple[Edit, ...]:
    return (*plan.inputs.edits, *plan.outputs.edits)


def _applied(
    adapter: TurnAdapter[Native], messages: Sequence[Native], edits: Sequence[Edit]
) -> tuple[tuple[Native, ...], Sequence[Native]]:
    """The edited messages, and ``messages`` with them in place (itself when none is)."""
    updated = tuple(adapter.apply(messages[e.index], e) for e in edits)
    if not edits:
        return updated, messages
    out = list(messages)
    for edit, message in zip(edits, updated, strict=True):
        out[edit.index] = message
    return updated, out
