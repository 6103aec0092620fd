"""A ledger kept from call to call plans exactly as a fresh one built for each request."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tokenlean.context_editor import (
    Clearing,
    ContextEditorSettings,
    RequestLedger,
    RequestView,
    plan_clearing,
    plan_ledger,
)
from tokenlean.context_editor._config import DEFAULT_RETRIEVAL_TOOL
from tokenlean.context_editor._plan import _Scan
from tokenlean.cost import PRICING
from tokenlean.tokens import EstimateCounter, message_tokens
from tokenlean.transcript import Message, ToolCall

RETRIEVAL = ({"name": DEFAULT_RETRIEVAL_TOOL, "description": "read a cleared result"},)
ELSEWHERE = {"context_editing": {"cleared": True, "strategy": "langchain"}}

# one tool call: its tool, its result's size in words, and what is odd about it
call = st.tuples(
    st.sampled_from(["read", "grep", "secret"]),
    st.one_of(st.integers(0, 40), st.integers(40, 400)),
    st.sampled_from(["", "", "", "", "", "duplicate", "elsewhere", "image", "early"]),
)
# one call of the model: the assistant turn's calls, whether the retrieval tool is offered,
# and whether someone else asked to leave some results alone (rarely changing either, which
# makes the planner scan afresh)
rarely = st.sampled_from([False, False, False, False, True])
turn = st.tuples(st.lists(call, min_size=1, max_size=3), rarely, rarely)


def _prompts(turns: list[tuple[list[tuple[str, int, str]], bool, bool]]) -> list[Any]:
    """(messages, tools, skip) for each model call of a run with the given turns."""
    messages = [Message("user", "fix the bug", id="u")]
    prompts: list[Any] = []
    late: list[ToolCall] = []  # calls whose result came before them (unpaired until they come)
    for n, (calls, retrieval, skip) in enumerate(turns):
        tool_calls = tuple(
            ToolCall(f"c{n}_{k}", name, {"path": f"src/f{n}_{k}.py"})
            for k, (name, _, _) in enumerate(calls)
        )
        tool_calls, late = (*late, *tool_calls), []
        messages.append(Message("assistant", f"turn {n}", id=f"a{n}", tool_calls=tool_calls))
        for tool_call, (_, size, odd) in zip(
            tool_calls[len(tool_calls) - len(calls) :], calls, strict=True
        ):
            text = " ".join(f"w{n}_{i}" for i in range(size))
            content: Any = ({"type": "image", "url": "x"},) if odd == "image" else text
            marks = ELSEWHERE if odd == "elsewhere" else {}
            call_id = "c0_0" if odd == "duplicate" else tool_call.id
            if odd == "early":
                call_id = f"late{n}"
                late.append(ToolCall(call_id, tool_call.name, tool_call.args))
            messages.append(
                Message(
                    "tool",
                    content,
                    id=f"t{n}_{len(messages)}",
                    tool_call_id=call_id,
                    metadata=marks,
                )
            )
        skipped = frozenset({"c1_0", "c4_1", "late3"} if skip else ())
        prompts.append((list(messages), RETRIEVAL if retrieval else (), skipped))
    return prompts


def _plan_both_ways(turns: Any, config: ContextEditorSettings) -> RequestLedger:
    """Plan each call of a run on one kept ledger and on a fresh one; the kept ledger."""
    counter = EstimateCounter()
    ledger = RequestLedger(counter)
    previous: Mapping[str, Clearing] = {}
    for messages, tools, skip in _prompts(turns):
        request = RequestView(tuple(messages), "sys", tools)
        fresh = plan_clearing(request, config=config, previous=previous, skip=skip, counter=counter)
        ledger.extend(messages[len(ledger.view) :])
        kept = plan_ledger(
            ledger, config=config, previous=previous, system="sys", tools=tools, skip=skip
        )
        assert kept == fresh
        previous = kept.cleared
        # what it holds is what a recount gives: each message as sent, and the sums before each
        assert ledger.tokens == [message_tokens(m, counter) for m in ledger.sent()]
        sums = list(itertools.accumulate(ledger.tokens, initial=0))
        assert [ledger.before(i) for i in range(len(sums))] == sums
        if isinstance(scan := ledger.scan, _Scan):  # and what the planner keeps of its scan
            saved = (judged.saved for _, judged in scan.found)
            assert scan.sums == list(itertools.accumulate(saved, initial=0))
    return ledger


@settings(max_examples=150, deadline=None)
@example(  # a result paired only once its call comes: older than a candidate found before it
    turns=[([("read", 400, "early"), ("read", 400, "")], False, False), ([], False, False)],
    keep=0,
    batch=4,
    trigger=0,
    mode="plain",
    pricing="none",
    expected=None,
    clear_inputs=False,
)
@given(
    turns=st.lists(turn, min_size=1, max_size=30),
    keep=st.integers(0, 3),
    batch=st.integers(1, 4),
    trigger=st.one_of(st.integers(0, 2_000), st.integers(0, 8_000)),
    mode=st.sampled_from(["plain", "cache_aware"]),
    pricing=st.sampled_from(sorted(PRICING)),
    expected=st.sampled_from([None, 400]),
    clear_inputs=st.booleans(),
)
def test_a_kept_ledger_plans_as_a_fresh_one(
    turns: Any,
    keep: int,
    batch: int,
    trigger: int,
    mode: Any,
    pricing: Any,
    expected: int | None,
    clear_inputs: bool,
) -> None:
    config = ContextEditorSettings(
        trigger_tokens=trigger,
        keep=keep,
        batch=batch,
        exclude_tools={"secret"},
        mode=mode,
        pricing=pricing,
        expected_calls=expected,
        clear_tool_inputs=clear_inputs,
    )
    _plan_both_ways(turns, config)


@pytest.mark.parametrize(
    ("mode", "trigger", "small"),
    [("plain", 3_000, 20), ("cache_aware", 20_000, 60)],
)
def test_the_scan_is_kept_across_the_planners_own_clearings(
    mode: Any, trigger: int, small: int
) -> None:
    # Many clearings in one long run, each followed by more calls planned on the same ledger;
    # in cache-aware mode some old candidates stay (clearing them would not pay) while newer
    # ones are cleared around them.
    turns = [([("read", small if n % 3 == 0 else 400, "")], False, 0) for n in range(120)]
    config = ContextEditorSettings(trigger_tokens=trigger, mode=mode)
    ledger = _plan_both_ways(turns, config)
    assert len(ledger.cleared) >= 30
    assert ledger.scan is not None  # not dropped by the planner's own clearing
