"""The rules of when a run is offered ``read_original``, read from a thread's ledger."""

from __future__ import annotations

from dataclasses import dataclass

from tokenlean.cost import ANTHROPIC
from tokenlean.offering import (
    CALLED_AT_KEY,
    FORGONE_KEY,
    OFFERED_KEY,
    SAVED_KEY,
    Offer,
    OfferRules,
    names_tool,
)
from tokenlean.transcript import MARK_KEY, Message


@dataclass
class Measure:
    """A thread of ``turns`` calls whose prompt has ``tokens`` tokens, ``fresh`` of them new."""

    n: int = 10
    tokens: int = 20_000
    fresh: int = 500
    asked: int = 0

    def turns(self) -> int:
        self.asked += 1
        return self.n

    def prompt(self) -> int:
        self.asked += 1
        return self.tokens

    def new(self) -> int:
        self.asked += 1
        return self.fresh

    def first_call(self) -> bool:
        return self.n == 0


RULES = OfferRules(Offer(schema=100, share=0.01), ANTHROPIC, clock=lambda: 10_000.0)
WARM = {CALLED_AT_KEY: 10_000.0 - 10}
COLD = {CALLED_AT_KEY: 10_000.0 - ANTHROPIC.cache_ttl - 1}


def test_the_tool_joins_only_on_a_cold_call_whose_cuts_pay() -> None:
    assert not RULES.joins_now(WARM, Measure(), extra=10**6)  # a warm join is a prefix break
    assert RULES.joins_now(COLD, Measure(), extra=10_000)
    assert not RULES.joins_now(COLD, Measure(), extra=1)  # too little to pay for the schema
    assert not RULES.joins_now(COLD, Measure(), extra=0)
    assert RULES.joins_now({**COLD, FORGONE_KEY: 10_000}, Measure(), extra=1)  # the thread's rate


def test_a_call_is_dated_and_counted_and_nothing_is_measured_without_savings() -> None:
    measure = Measure()
    update = RULES.account({}, measure, saved=0, kept=0)
    assert update == {CALLED_AT_KEY: 10_000.0} and measure.asked == 0
    assert RULES.account({}, measure, saved=0, kept=2, forgone=30) == {
        "tokenlean_originals": 2,
        FORGONE_KEY: 30,
        CALLED_AT_KEY: 10_000.0,
    }


def test_banked_savings_offer_the_tool_on_a_cold_call_not_on_a_warm_one() -> None:
    banked = {SAVED_KEY: 50_000}
    assert OFFERED_KEY not in RULES.account({**banked, **WARM}, Measure(), saved=0, kept=0)
    assert RULES.account({**banked, **COLD}, Measure(), saved=0, kept=0)[OFFERED_KEY]
    assert OFFERED_KEY not in RULES.account({SAVED_KEY: 10, **COLD}, Measure(), saved=0, kept=0)


def test_an_offer_is_recorded_once() -> None:
    assert RULES.account({}, Measure(), saved=5, kept=1, offer=True)[OFFERED_KEY]
    assert OFFERED_KEY not in RULES.account({OFFERED_KEY: True}, Measure(), saved=5, kept=1)


def test_markers_that_name_the_tool_are_found_only_in_shortened_results() -> None:
    marked = {MARK_KEY: {"shorten": {"tokens_before": 900}}}
    text = 'lines 3-400 omitted: read_original("h0123456789ab", lines="3-400")'
    assert names_tool(
        [Message(role="tool", content=text, name="bash", metadata=marked)], "read_original"
    )
    assert not names_tool([Message(role="tool", content=text, name="bash")], "read_original")
    answer = Message(role="tool", content=text, name="read_original", metadata=marked)
    assert not names_tool([answer], "read_original")  # its own answers prove nothing
