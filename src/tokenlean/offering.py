"""When a run is offered the ``read_original`` tool: the rules every way in that lists it asks.

The tool list sits at the front of the prompt, so a tool that joins a run re-writes every token
cached before it. :class:`Offer` is the rule of the first call (the tool's schema is a
negligible share of that prompt), the same for every way in that lists the tool. A way in that
can list it from any later call on (LangChain's middleware, whose agent state carries a
thread's *ledger*: the counters below, summed by the state's reducers) also asks
:class:`OfferRules` on each call: does offering it now pay (:meth:`OfferRules.joins_now`, on a
call whose cache went cold), and what this call adds to the ledger, with the offer made once
the thread's cuts have banked enough (:meth:`OfferRules.account`). The way in only measures
its thread (:class:`ThreadMeasure`); the arithmetic is :mod:`tokenlean.cost`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tokenlean.cost import CachePricing, joining_pays, negligible, offering_pays
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter, message_tokens
from tokenlean.transcript import MARK_KEY, Message

__all__ = [
    "CALLED_AT_KEY",
    "FORGONE_KEY",
    "KEPT_KEY",
    "OFFERED_KEY",
    "SAVED_AT_KEY",
    "SAVED_KEY",
    "Offer",
    "OfferRules",
    "ThreadMeasure",
    "names_tool",
]

#: Ledger key counting the originals kept in a thread.
KEPT_KEY = "tokenlean_originals"
#: Ledger keys summing the tokens the thread's cuts removed (``S``), and each cut times the
#: number of model calls made before it (``W``): at call ``k`` the cuts have saved
#: ``write * S + read * (k * S - W)`` so far, which is what pays for offering the tool.
SAVED_KEY = "tokenlean_originals_saved"
SAVED_AT_KEY = "tokenlean_originals_saved_at"
#: Ledger key summing what cuts would have saved on calls where the thread had no tool to name
#: in their markers (so they were not made): the rate at which its results need cutting.
FORGONE_KEY = "tokenlean_originals_forgone"
#: Ledger key set once the thread has been offered the tool (it stays offered).
OFFERED_KEY = "tokenlean_originals_offered"
#: Ledger key holding when the thread last called the model (seconds since the epoch): a call
#: later than the pricing's ``cache_ttl`` after it finds the prompt cache cold.
CALLED_AT_KEY = "tokenlean_called_at"


@dataclass(frozen=True, slots=True)
class Offer:
    """Whether a run is offered the ``read_original`` tool from its first call, the same rule
    on every way in that lists it: when the tool's ``schema`` (tokens) is negligible beside
    that call's prompt (:func:`~tokenlean.cost.negligible` at ``share``), or ``always``. The
    ways in that cannot time a later join (pydantic-ai, AgentScope) never offer it later, and
    a run with a short first prompt (a QA or retail agent) does not pay the schema on every
    call for cuts that rarely cover it. ``counter`` counts the prompt (default: the estimate).
    """

    schema: int
    share: float
    always: bool = False
    counter: TokenCounter | None = None

    def offered(self, messages: Sequence[Message], fixed: int = 0) -> bool:
        """The rule, read from the messages before the first assistant turn (the first call's,
        so the answer is the same on every call of a run, and after a restart) and ``fixed``
        tokens the adapter knows that call also sends."""
        if self.always:
            return True
        counter = self.counter or DEFAULT_COUNTER
        prompt = fixed
        for message in messages:
            if message.role == "assistant":
                break
            prompt += message_tokens(message, counter)
        return negligible(self.schema, prompt, self.share)


class ThreadMeasure(Protocol):
    """What a way in measures of its thread for :class:`OfferRules`, each asked only when a
    rule needs it (counting a long history is the costly part)."""

    def turns(self) -> int:
        """The model calls the thread has made (assistant messages in its history)."""
        ...

    def prompt(self) -> int:
        """Tokens of this call's prompt: system prompt, tool schemas and messages."""
        ...

    def new(self) -> int:
        """Tokens of the messages new since the thread's previous call."""
        ...

    def first_call(self) -> bool:
        """Whether this is the thread's first call (no assistant message yet)."""
        ...


@dataclass(frozen=True, slots=True)
class OfferRules:
    """The rules of a run that may be offered the tool from any call on, read from its ledger
    (a mapping holding the keys above). ``offer`` is the first call's rule (its ``schema`` is
    what the tool costs on each call); ``min_remaining_calls``: the later calls the schema is
    charged for, at least; ``clock`` dates the calls."""

    offer: Offer
    pricing: CachePricing
    min_remaining_calls: int = 0
    clock: Callable[[], float] = field(default=time.time, compare=False)

    def offered(self, ledger: Mapping[str, Any]) -> bool:
        """Whether the thread was offered the tool (or every thread is)."""
        return self.offer.always or bool(ledger.get(OFFERED_KEY))

    def joins_now(self, ledger: Mapping[str, Any], measure: ThreadMeasure, *, extra: int) -> bool:
        """Whether offering the tool on this call pays: only where adding it to the front of
        the prompt re-writes nothing the provider still holds (the thread's previous call is
        older than the pricing's ``cache_ttl``), and only when the cuts that name it (``extra``
        tokens more than those that need no way back), with later calls cutting at the rate
        the thread's earlier calls would have (:data:`FORGONE_KEY`), cover the schema's cost.
        On a warm call the tool never joins: that would be a prefix break."""
        called = ledger.get(CALLED_AT_KEY)
        pricing = self.pricing
        cold = isinstance(called, (int, float)) and self.clock() - called > pricing.cache_ttl
        if extra <= 0 or not (cold or pricing.cached_read >= pricing.uncached):
            return False
        return joining_pays(
            pricing,
            extra=extra,
            forgone=int(ledger.get(FORGONE_KEY) or 0),
            schema=self.offer.schema,
            calls=max(measure.turns(), self.min_remaining_calls),
        )

    def account(
        self,
        ledger: Mapping[str, Any],
        measure: ThreadMeasure,
        *,
        saved: int,
        kept: int,
        offer: bool = False,
        forgone: int = 0,
    ) -> dict[str, Any]:
        """What this call adds to the ledger: ``kept`` originals cut by ``saved`` tokens,
        ``forgone`` tokens not cut for want of the tool, the call's date, and
        :data:`OFFERED_KEY` when ``offer`` (this call's cuts name the tool: the first call's
        rule or :meth:`joins_now` said so) or when the thread's savings so far now pay for it
        on a call that re-writes nothing cached (:func:`~tokenlean.cost.offering_pays`)."""
        update: dict[str, Any] = {KEPT_KEY: kept} if kept else {}
        if forgone:
            update[FORGONE_KEY] = forgone
        offered = self.offered(ledger)
        if not offered and offer:
            update[OFFERED_KEY] = True  # kept through restarts
        now, last = self.clock(), ledger.get(CALLED_AT_KEY)
        update[CALLED_AT_KEY] = now
        total = int(ledger.get(SAVED_KEY) or 0) + saved
        if offered or OFFERED_KEY in update or not total:
            return update
        if isinstance(last, (int, float)):
            cold = now - last > self.pricing.cache_ttl
        else:  # no call dated: cold at the thread's first call, else not known to be (a ledger
            cold = measure.first_call()  # from before calls were dated): assume warm
        turns = measure.turns()
        if saved:
            update[SAVED_KEY] = saved
            update[SAVED_AT_KEY] = saved * turns
        if self._banked_pays(ledger, measure, total=total, saved=saved, cold=cold):
            update[OFFERED_KEY] = True
        return update

    def _banked_pays(
        self,
        ledger: Mapping[str, Any],
        measure: ThreadMeasure,
        *,
        total: int,
        saved: int,
        cold: bool,
    ) -> bool:
        pricing, turns = self.pricing, measure.turns()
        weighted = int(ledger.get(SAVED_AT_KEY) or 0) + saved * turns
        prompt = measure.prompt()
        return offering_pays(
            pricing,
            prompt=prompt,
            new=prompt if cold else measure.new(),  # a cold cache writes the whole prompt
            banked=pricing.uncached * total + pricing.cached_read * (turns * total - weighted),
            schema=self.offer.schema,
            calls=max(turns, self.min_remaining_calls),
        )


def names_tool(messages: Sequence[Message], tool: str) -> bool:
    """Whether a tool result tokenlean shortened names ``tool`` in a marker: a run restored
    after a restart, or served by another worker, whose markers the agent must still be able
    to follow (so the tool is listed again, whatever the first call's rule said)."""
    hint = f'{tool}("'
    for message in messages:
        if message.role != "tool" or message.name == tool:
            continue
        marks = message.metadata.get(MARK_KEY)
        if isinstance(marks, Mapping) and marks and hint in message.text:
            return True
    return False
