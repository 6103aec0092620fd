"""The offline model of Anthropic's ``clear_tool_uses_20250919``: what the model reads after it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenlean.provider_clearing import (
    EDIT_TYPE,
    PLACEHOLDER,
    ClearToolUses,
    clear_tool_uses,
)
from tokenlean.tokens import EstimateCounter, count_request
from tokenlean.transcript import Message, ToolCall

COUNTER = EstimateCounter()
TOOLS = ({"type": "function", "function": {"name": "bash", "description": "run " * 400}},)


def run(tools: Sequence[str], size: int = 400) -> list[Message]:
    """A system prompt, a task, then one call and its result per entry of ``tools``."""
    out = [Message("system", "You fix bugs."), Message("user", "Fix the failing test.")]
    for n, tool in enumerate(tools):
        call = ToolCall(f"call-{n}", tool, {"command": f"step {n}"})
        out.append(Message("assistant", f"Step {n}.", id=f"ai-{n}", tool_calls=(call,)))
        body = [f"line {n}.{k}: value_{n}_{k}" for k in range(size // 20)]
        out.append(Message("tool", "\n".join(body), name=tool, tool_call_id=call.id))
    return out


def results(messages: Sequence[Message]) -> list[str]:
    return [m.text for m in messages if m.role == "tool"]


def cleared_ids(messages: Sequence[Message]) -> list[str]:
    return [m.tool_call_id or "" for m in messages if m.role == "tool" and m.text == PLACEHOLDER]


def over(messages: Sequence[Message], **options: object) -> ClearToolUses:
    """Options whose token trigger the request just exceeds."""
    return ClearToolUses(trigger=count_request(messages, COUNTER) - 1, **options)  # type: ignore[arg-type]  # test options


def test_below_or_at_the_trigger_nothing_changes() -> None:
    messages = run(["bash"] * 8)
    at = ClearToolUses(trigger=count_request(messages, COUNTER))  # "exceeds": equal is not over
    for settings in (ClearToolUses(), at):
        seen = clear_tool_uses(messages, settings=settings, counter=COUNTER)
        assert list(seen.messages) == messages and seen.applied is None


def test_past_the_trigger_all_but_the_newest_keep_are_cleared() -> None:
    messages = run(["bash"] * 8)
    seen = clear_tool_uses(messages, settings=over(messages), counter=COUNTER)
    assert cleared_ids(seen.messages) == [f"call-{n}" for n in range(5)]
    assert results(seen.messages)[5:] == results(messages)[5:]  # the newest 3, as sent
    freed = count_request(messages, COUNTER) - count_request(seen.messages, COUNTER)
    assert seen.applied is not None
    assert seen.applied.report() == {
        "type": EDIT_TYPE,
        "cleared_tool_uses": 5,
        "cleared_input_tokens": freed,
    }
    assert freed > 0


@pytest.mark.parametrize(("keep", "cleared"), [(0, 8), (1, 7), (7, 1), (8, 0), (20, 0)])
def test_keep_counts_the_newest_tool_uses(keep: int, cleared: int) -> None:
    messages = run(["bash"] * 8)
    seen = clear_tool_uses(messages, settings=over(messages, keep=keep), counter=COUNTER)
    assert cleared_ids(seen.messages) == [f"call-{n}" for n in range(cleared)]
    assert (seen.applied is None) == (cleared == 0)


def test_the_trigger_counts_tool_schemas_too() -> None:
    messages = run(["bash"] * 6)
    settings = over(messages)
    settings = ClearToolUses(trigger=settings.trigger + 100)  # messages alone stay under it
    assert clear_tool_uses(messages, settings=settings, counter=COUNTER).applied is None
    seen = clear_tool_uses(messages, tools=TOOLS, settings=settings, counter=COUNTER)
    assert seen.applied is not None and seen.applied.cleared_tool_uses == 3


def test_a_tool_uses_trigger_counts_results() -> None:
    messages = run(["bash"] * 6)
    five = ClearToolUses(trigger=5, trigger_type="tool_uses")
    six = ClearToolUses(trigger=6, trigger_type="tool_uses")
    assert clear_tool_uses(messages, settings=five).applied is not None
    assert clear_tool_uses(messages, settings=six).applied is None


def test_excluded_tools_are_never_cleared_and_count_among_the_kept() -> None:
    messages = run(["read", "bash", "read", "bash", "bash", "read", "bash"])
    seen = clear_tool_uses(messages, settings=over(messages, exclude_tools=["read"]))
    assert cleared_ids(seen.messages) == ["call-1", "call-3"]  # call-4 is among the newest 3


def test_clear_at_least_leaves_the_prompt_alone_when_too_little_would_go() -> None:
    messages = run(["bash"] * 8)
    freed = clear_tool_uses(messages, settings=over(messages)).applied
    assert freed is not None
    enough = over(messages, clear_at_least=freed.cleared_input_tokens)
    too_much = over(messages, clear_at_least=freed.cleared_input_tokens + 1)
    assert clear_tool_uses(messages, settings=enough).applied == freed
    assert clear_tool_uses(messages, settings=too_much).applied is None


@pytest.mark.parametrize("inputs", [True, ["bash"]])
def test_clear_tool_inputs_empties_only_the_cleared_calls(inputs: object) -> None:
    messages = run(["bash", "read", "bash", "bash", "bash", "bash"])
    seen = clear_tool_uses(messages, settings=over(messages, clear_tool_inputs=inputs))
    args = {c.id: dict(c.args) for m in seen.messages for c in m.tool_calls}
    emptied = {"call-0", "call-2"} | ({"call-1"} if inputs is True else set())
    assert {i for i, a in args.items() if not a} == emptied
    assert cleared_ids(seen.messages) == ["call-0", "call-1", "call-2"]
    assert [m.id for m in seen.messages] == [m.id for m in messages]


def test_a_cleared_result_keeps_every_other_field() -> None:
    messages = run(["bash"] * 5)
    messages[3] = Message(
        "tool", "boom\n" * 300, name="bash", tool_call_id="call-0", status="error", id="t-0"
    )
    seen = clear_tool_uses(messages, settings=over(messages))
    assert seen.messages[3] == Message(
        "tool", PLACEHOLDER, name="bash", tool_call_id="call-0", status="error", id="t-0"
    )


@given(
    tools=st.lists(st.sampled_from(["bash", "read", "grep"]), max_size=12),
    keep=st.integers(0, 5),
    excluded=st.sets(st.sampled_from(["bash", "read"])),
    inputs=st.booleans(),
)
def test_pairing_determinism_and_inputs_hold(
    tools: list[str], keep: int, excluded: set[str], inputs: bool
) -> None:
    messages = run(tools, size=60)
    sent = list(messages)
    settings = ClearToolUses(trigger=0, keep=keep, exclude_tools=excluded, clear_tool_inputs=inputs)
    seen = clear_tool_uses(messages, settings=settings)
    assert messages == sent  # the client's history is never changed
    assert clear_tool_uses(messages, settings=settings) == seen  # deterministic
    calls = [c.id for m in seen.messages for c in m.tool_calls]
    answered = [m.tool_call_id for m in seen.messages if m.role == "tool"]
    assert calls == answered  # every call keeps its result, in order
    newest = [m.tool_call_id for m in messages if m.role == "tool"][len(tools) - keep :]
    cleared = set(cleared_ids(seen.messages))
    assert not cleared & set(newest)
    assert all(m.name not in excluded for m in seen.messages if m.tool_call_id in cleared)
    old = len(tools) - min(keep, len(tools))
    assert len(cleared) == sum(1 for t in tools[:old] if t not in excluded)


def test_edit_is_what_the_request_sends() -> None:
    assert ClearToolUses().edit() == {
        "type": EDIT_TYPE,
        "trigger": {"type": "input_tokens", "value": 100_000},
        "keep": {"type": "tool_uses", "value": 3},
        "clear_tool_inputs": False,
    }
    custom = ClearToolUses(
        trigger=30_000, clear_at_least=5_000, exclude_tools=["web_search"], clear_tool_inputs=["b"]
    ).edit()
    assert custom["clear_at_least"] == {"type": "input_tokens", "value": 5_000}
    assert custom["exclude_tools"] == ["web_search"] and custom["clear_tool_inputs"] == ["b"]


@pytest.mark.parametrize(
    "options",
    [
        {"keep": -1},
        {"trigger": 1.5},
        {"trigger_type": "messages"},
        {"exclude_tools": "bash"},
        {"clear_tool_inputs": "bash"},
    ],
)
def test_bad_options_are_refused_by_name(options: dict[str, object]) -> None:
    name = next(iter(options))
    with pytest.raises(ValueError, match=name):
        ClearToolUses(**options)  # type: ignore[arg-type]  # deliberately wrong
