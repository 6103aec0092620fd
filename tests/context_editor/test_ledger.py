"""A ledger kept from call to call plans exactly as a fresh one built for each request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenlean.context_editor import (
    Clearing,
    ContextEditorConfig,
    RequestLedger,
    RequestView,
    plan_clearing,
    plan_ledger,
)
from tokenlean.context_editor.config import DEFAULT_RETRIEVAL_TOOL
from tokenlean.cost import PRICING
from tokenlean.tokens import EstimateCounter, message_tokens
from tokenlean.transcript import Message, ToolCall

RETRIEVAL = ({"name": DEFAULT_RETRIEVAL_TOOL, "description": "read a cleared result"},)
ELSEWHERE = {"context_editing": {"cleared": True, "strategy": "langchain"}}

# one tool call: its tool, its result's size in words, and what is odd about it
call = st.tuples(
    st.sampled_from(["read", "grep", "secret"]),
    st.one_of(st.integers(0, 40), st.integers(40, 400)),
    st.sampled_from(["", "", "", "", "", "duplicate", "elsewhere", "image"]),
)
# one call of the model: the assistant turn's calls, whether the retrieval tool is offered,
# and which results someone else asked to leave alone
turn = st.tuples(st.lists(call, min_size=1, max_size=3), st.booleans(), st.integers(0, 5))


def _prompts(turns: list[tuple[list[tuple[str, int, str]], bool, int]]) -> list[Any]:
    """(messages, tools, skip) for each model call of a run with the given turns."""
    messages = [Message("user", "fix the bug", id="u")]
    prompts: list[Any] = []
    for n, (calls, retrieval, skip) in enumerate(turns):
        tool_calls = tuple(
            ToolCall(f"c{n}_{k}", name, {"path": f"src/f{n}_{k}.py"})
            for k, (name, _, _) in enumerate(calls)
        )
        messages.append(Message("assistant", f"turn {n}", id=f"a{n}", tool_calls=tool_calls))
        for tool_call, (_, size, odd) in zip(tool_calls, calls, strict=True):
            text = " ".join(f"w{n}_{i}" for i in range(size))
            content: Any = ({"type": "image", "url": "x"},) if odd == "image" else text
            marks = ELSEWHERE if odd == "elsewhere" else {}
            call_id = "c0_0" if odd == "duplicate" else tool_call.id
            messages.append(
                Message(
                    "tool",
                    content,
                    id=f"t{n}_{len(messages)}",
                    tool_call_id=call_id,
                    metadata=marks,
                )
            )
        skipped = frozenset(f"c{m}_0" for m in range(max(0, n - skip), n))
        prompts.append((list(messages), RETRIEVAL if retrieval else (), skipped))
    return prompts


def _plan_both_ways(turns: Any, config: ContextEditorConfig) -> RequestLedger:
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
        assert [ledger.before(i) for i in range(len(ledger.view) + 1)] == [
            sum(ledger.tokens[:i]) for i in range(len(ledger.view) + 1)
        ]
    return ledger


@settings(max_examples=150, deadline=None)
@given(
    turns=st.lists(turn, min_size=1, max_size=30),
    keep=st.integers(0, 4),
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
    config = ContextEditorConfig(
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


@pytest.mark.parametrize("mode", ["plain", "cache_aware"])
def test_the_scan_is_kept_across_the_planners_own_clearings(mode: Any) -> None:
    # Many clearings in one run, each followed by more calls planned on the same ledger.
    turns = [([("read", 300, ""), ("grep", 20, "")], False, 0) for _ in range(40)]
    config = ContextEditorConfig(
        trigger_tokens=3_000, keep=2, batch=2, mode=mode, pricing="none", min_saved_tokens=0
    )
    ledger = _plan_both_ways(turns, config)
    assert len(ledger.cleared) >= 10
    assert ledger.scan is not None  # not dropped by the planner's own clearing
