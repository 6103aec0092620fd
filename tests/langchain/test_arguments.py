"""Every public constructor and function of ``tokenlean.langchain`` and ``tokenlean.testing``
refuses bad arguments at construction, naming the parameter and what it accepts; a counter,
store, detector or classifier that does not fit its protocol is refused up front, not logged
on every call. (The core's table is ``tests/test_checks.py``.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage

import tokenlean.langchain as lc
import tokenlean.testing as testing
from tokenlean.checks import ArgumentTypeError as WRONG
from tokenlean.langchain import (
    ContextEditorMiddleware,
    LoopGuardMiddleware,
    TokenBudgetMiddleware,
    TokenSavingMiddleware,
    ToolInputShorteningMiddleware,
    ToolOutputShorteningMiddleware,
    recommended_middleware,
)

NOT_A_COUNTER = object()


def _case(
    call: Callable[..., Any], kwargs: dict[str, Any], error: type[Exception], pattern: str
) -> Any:
    name = getattr(call, "__name__", repr(call))
    return pytest.param(call, kwargs, error, pattern, id=f"{name}-{'-'.join(kwargs)}")


CASES = [
    # the cases
    _case(ToolOutputShorteningMiddleware, {"tool_name": 123}, ValueError, "tool_name must be an"),
    _case(ToolOutputShorteningMiddleware, {"min_saving": "0.1"}, ValueError, "min_saving must be"),
    _case(recommended_middleware, {"provider": ["anthropic"]}, ValueError, "provider must be one"),
    _case(LoopGuardMiddleware, {"responses": "nudge"}, TypeError, "not a bare string, got 'nudge'"),
    _case(ToolOutputShorteningMiddleware, {"counter": object()}, TypeError, "counter must be a"),
    # output shortening
    _case(ToolOutputShorteningMiddleware, {"min_tokens": "5"}, ValueError, "min_tokens"),
    _case(ToolOutputShorteningMiddleware, {"max_tokens": "5"}, TypeError, "max_tokens must be"),
    _case(ToolOutputShorteningMiddleware, {"options": {"max_tokens": 5}}, ValueError, "options"),
    _case(ToolOutputShorteningMiddleware, {"only": ["a", 1]}, ValueError, "only"),
    _case(ToolOutputShorteningMiddleware, {"never": "bash"}, ValueError, "never"),
    _case(ToolOutputShorteningMiddleware, {"store": object()}, TypeError, "store must be an"),
    _case(ToolOutputShorteningMiddleware, {"store": "memory"}, TypeError, "store must be an"),
    _case(ToolOutputShorteningMiddleware, {"retrieval_tool": "yes"}, WRONG, "retrieval_tool must"),
    _case(ToolOutputShorteningMiddleware, {"dedupe": "no"}, WRONG, "dedupe must be True or False"),
    # input shortening
    _case(ToolInputShorteningMiddleware, {"tool_name": 123}, TypeError, "tool_name must be an"),
    _case(ToolInputShorteningMiddleware, {"settings": {"min_tokens": 5}}, WRONG, "settings must"),
    _case(ToolInputShorteningMiddleware, {"offer_tool": "now"}, ValueError, "offer_tool must"),
    _case(ToolInputShorteningMiddleware, {"store": object()}, TypeError, "store must be an"),
    _case(ToolInputShorteningMiddleware, {"retrieval_tool": None}, WRONG, "retrieval_tool must"),
    # context editor
    _case(ContextEditorMiddleware, {"trigger_tokens": "5"}, WRONG, "trigger_tokens must be an"),
    _case(ContextEditorMiddleware, {"trigger_tokens": True}, WRONG, "trigger_tokens must be an"),
    _case(ContextEditorMiddleware, {"keep": -1}, ValueError, "keep must be an int >= 0"),
    _case(ContextEditorMiddleware, {"batch": 0}, ValueError, "batch must be an int >= 1"),
    _case(ContextEditorMiddleware, {"exclude_tools": "bash"}, WRONG, "exclude_tools .*bare"),
    _case(ContextEditorMiddleware, {"clear_tool_inputs": "yes"}, WRONG, "clear_tool_inputs must"),
    _case(ContextEditorMiddleware, {"placeholder": 5}, ValueError, "placeholder must be"),
    _case(ContextEditorMiddleware, {"token_estimator": object()}, WRONG, "token_estimator must"),
    _case(ContextEditorMiddleware, {"on_edit": 5}, ValueError, "on_edit must be callable"),
    _case(ContextEditorMiddleware, {"mode": "smart"}, ValueError, "mode must be one of"),
    _case(ContextEditorMiddleware, {"mode": ["plain"]}, ValueError, "mode must be one of"),
    _case(ContextEditorMiddleware, {"pricing": "gemini"}, ValueError, "pricing must be one of"),
    _case(ContextEditorMiddleware, {"expected_calls": 0}, ValueError, "expected_calls must be"),
    _case(ContextEditorMiddleware, {"min_saved_tokens": "5"}, WRONG, "min_saved_tokens must"),
    _case(ContextEditorMiddleware, {"retrieval_tool": 5}, WRONG, "retrieval_tool must be an"),
    # loop guard
    _case(LoopGuardMiddleware, {"responses": ["boom"]}, ValueError, "responses must be a non-"),
    _case(LoopGuardMiddleware, {"responses": 5}, WRONG, "responses must be a sequence"),
    _case(LoopGuardMiddleware, {"detector": object()}, WRONG, "detector must be a LoopDetector"),
    _case(LoopGuardMiddleware, {"recovery_steps": 0}, ValueError, "recovery_steps must be an"),
    _case(LoopGuardMiddleware, {"nudge_text": 5}, ValueError, "nudge_text must be"),
    _case(LoopGuardMiddleware, {"final_tool_choice": 5}, WRONG, "final_tool_choice must be"),
    _case(LoopGuardMiddleware, {"max_events": -1}, ValueError, "max_events must be an int"),
    # budget
    _case(TokenBudgetMiddleware, {"token_budget": "5"}, ValueError, "token_budget"),
    _case(TokenBudgetMiddleware, {"token_budget": 0}, ValueError, "token_budget"),
    _case(
        TokenBudgetMiddleware,
        {"token_budget": 9, "cache_read_weight": "x"},
        ValueError,
        "cache_read_weight",
    ),
    _case(TokenBudgetMiddleware, {"token_budget": 9, "hint_message": 5}, ValueError, "hint_mes"),
    _case(TokenBudgetMiddleware, {"token_budget": 9, "warn_at": 2}, ValueError, "warn_at"),
    _case(
        TokenBudgetMiddleware,
        {"token_budget": 9, "force_no_tools": "y"},
        WRONG,
        "force_no_tools must be True or False",
    ),
    _case(
        TokenBudgetMiddleware,
        {"token_budget": 9, "wrap_up_tool_choice": 5},
        WRONG,
        "wrap_up_tool_choice must be None, a string",
    ),
    _case(
        TokenBudgetMiddleware,
        {"token_budget": 9, "token_counter": NOT_A_COUNTER},
        TypeError,
        "token_counter must be a TokenCounter",
    ),
    _case(TokenBudgetMiddleware, {"token_budget": 9, "token_counter": []}, TypeError, "token_co"),
    # token saving
    _case(TokenSavingMiddleware, {"head_keep_chars": -1}, ValueError, "head_keep_chars"),
    _case(TokenSavingMiddleware, {"early_exit_text": 5}, ValueError, "early_exit_text"),
    _case(TokenSavingMiddleware, {"signals_fn": 5}, ValueError, "signals_fn"),
    _case(TokenSavingMiddleware, {"enable_compression": "y"}, WRONG, "enable_compression must"),
    _case(TokenSavingMiddleware, {"enable_early_exit": 1}, WRONG, "enable_early_exit must"),
    _case(TokenSavingMiddleware, {"compress_once": None}, WRONG, "compress_once must be True"),
    _case(TokenSavingMiddleware, {"perplexity_classifier": 5}, WRONG, "perplexity_classifier"),
    _case(TokenSavingMiddleware, {"payback_calls": 0}, ValueError, "payback_calls"),
    _case(TokenSavingMiddleware, {"pricing": "x"}, ValueError, "pricing must be one of"),
    _case(TokenSavingMiddleware, {"token_counter": NOT_A_COUNTER}, TypeError, "token_counter"),
    # the stack
    _case(recommended_middleware, {"provider": "gemini"}, ValueError, "provider must be one of"),
    _case(recommended_middleware, {"store": object()}, TypeError, "store must be an"),
    _case(recommended_middleware, {"context_window": "big"}, WRONG, "context_window must be"),
    _case(recommended_middleware, {"context_window": 0}, ValueError, "context_window must be"),
    _case(recommended_middleware, {"loop_guard": None}, WRONG, "loop_guard must be True"),
    # adapters
    _case(lc.apply_edits, {"messages": "x", "edits": []}, WRONG, "messages must be a list of"),
    _case(lc.apply_edits, {"messages": [], "edits": [1]}, WRONG, "edits must hold Edits"),
    _case(lc.apply_edits, {"messages": [], "edits": None}, WRONG, "edits must be a list"),
    _case(lc.to_view, {"messages": "x"}, WRONG, "messages must be a list of LangChain messages"),
    _case(lc.to_view, {"messages": [1]}, WRONG, r"messages\[0\] must be a LangChain message"),
    _case(lc.from_view, {"messages": "x"}, WRONG, "messages must be a sequence of tokenlean"),
    _case(lc.from_view, {"messages": [1]}, WRONG, r"messages\[0\] must be a tokenlean Message"),
    _case(lc.build_steps_from_messages, {"messages": "x"}, WRONG, "messages must be a list"),
    # testing
    _case(testing.prefix_breaks, {"calls": 5}, WRONG, "calls must be a sequence of Recorded"),
    _case(testing.prefix_breaks, {"calls": [1]}, WRONG, "calls must hold RecordedCalls"),
    _case(testing.assert_prefix_kept, {"calls": [], "allowed": "1"}, WRONG, "allowed must be"),
    _case(testing.assert_prefix_kept, {"calls": [], "allowed": [-1]}, ValueError, r"allowed\[\]"),
    _case(testing.scripted_agent, {"responses": "hi"}, WRONG, "responses must be a sequence"),
    _case(testing.scripted_agent, {"responses": [], "tools": "x"}, WRONG, "tools must be a seq"),
    _case(testing.scripted_agent, {"responses": [], "middleware": 5}, WRONG, "middleware must"),
    _case(testing.ScriptedChatModel, {"responses": 5}, ValueError, "responses"),
]


@pytest.mark.parametrize(("call", "kwargs", "error", "pattern"), CASES)
def test_bad_arguments_are_refused_at_construction(
    call: Callable[..., Any], kwargs: dict[str, Any], error: type[Exception], pattern: str
) -> None:
    with pytest.raises(error, match=pattern):
        call(**kwargs)


def test_a_bare_string_ladder_is_not_read_letter_by_letter() -> None:
    with pytest.raises(ValueError) as caught:  # an ArgumentTypeError is a ValueError too
        LoopGuardMiddleware(responses="nudge")  # type: ignore[arg-type]
    assert "'n', 'u'" not in str(caught.value)
    assert LoopGuardMiddleware(responses=["nudge"]).responses == ("nudge",)


def test_a_counter_that_does_not_fit_is_refused_before_any_call() -> None:
    # Before, this was accepted and shortening turned itself off with an error log per call.
    for middleware in (ToolOutputShorteningMiddleware, TokenSavingMiddleware):
        name = "counter" if middleware is ToolOutputShorteningMiddleware else "token_counter"
        with pytest.raises(TypeError, match=rf"{name} must be a TokenCounter with a count\(text\)"):
            middleware(**{name: object()})


def test_good_arguments_still_build_a_working_stack() -> None:
    agent, model = testing.scripted_agent(
        [AIMessage("done")], middleware=recommended_middleware("openai", loop_guard=True)
    )
    agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t"}})
    testing.assert_prefix_kept(model, allowed=())
    assert testing.prefix_breaks(model.calls) == []


NOT_CHECKED = {
    "RecordedCall": "a record the scripted model builds",
    "ViewCache": "a cache to_view and from_view take, made empty (no arguments)",
}


def test_every_public_callable_is_covered() -> None:
    covered = {getattr(case.values[0], "__name__", "") for case in CASES}
    public = {n for n in lc.__all__ if callable(getattr(lc, n))}
    public |= {n for n in testing.__all__ if callable(getattr(testing, n))}
    missing = public - covered - set(NOT_CHECKED)
    assert not missing, f"add bad-argument cases for {sorted(missing)}"
