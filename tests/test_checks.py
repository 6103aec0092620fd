"""Every public constructor and function of the core refuses bad arguments up front.

Each case names the call, the bad argument, the exception it must raise and a pattern its
message must match: the parameter's name and what it accepts. A wrong kind of value raises
``ArgumentTypeError`` (a ``TypeError`` that is also a ``ValueError``); a right kind out of range
raises ``ValueError``. :func:`test_every_public_callable_is_covered` keeps the table complete.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from typing import Any

import pytest

import tokenlean
from tokenlean import checks
from tokenlean.langchain.store import LangGraphOriginalStore
from tokenlean.shorten import (
    InputShorteningSettings,
    OutputShorteningSettings,
    Retrieval,
    ShortenSettings,
    error_lines,
    query_terms,
    query_text,
)
from tokenlean.store import InMemoryOriginalStore, excerpt
from tokenlean.transcript import Message, ToolCall

NOT_A_COUNTER = object()
WRONG = checks.ArgumentTypeError
PRICES = {"name": "x", "cached_read": 0.1, "uncached": 1.0}


class FakeAnthropic:
    """Has ``messages.create``, so only the argument under test is wrong."""

    class messages:  # the attribute the classifier calls
        @staticmethod
        def create(**_: Any) -> None:
            return None


def _case(
    call: Callable[..., Any], kwargs: dict[str, Any], error: type[Exception], pattern: str
) -> Any:
    name = getattr(call, "__name__", repr(call))
    return pytest.param(call, kwargs, error, pattern, id=f"{name}-{'-'.join(kwargs)}")


CORE_CASES = [
    # the cases
    _case(tokenlean.shorten, {"text": None}, WRONG, r"text must be a string, got None"),
    # pricing
    _case(tokenlean.CachePricing, {**PRICES, "name": 1}, WRONG, "name must be a string"),
    _case(tokenlean.CachePricing, {**PRICES, "cached_read": "0.1"}, WRONG, "cached_read must be"),
    _case(tokenlean.CachePricing, {**PRICES, "cached_read": -1}, ValueError, r"cached_read .*>= 0"),
    _case(tokenlean.CachePricing, {**PRICES, "uncached": 0}, ValueError, r"uncached .*> 0"),
    _case(tokenlean.CachePricing, {**PRICES, "min_cached": -1}, ValueError, "min_cached"),
    _case(tokenlean.CachePricing, {**PRICES, "granularity": 0}, ValueError, "granularity"),
    _case(tokenlean.CachePricing, {**PRICES, "uncached": math.inf}, ValueError, "uncached"),
    # counting
    _case(tokenlean.EstimateCounter, {"word": "1"}, WRONG, "word must be a finite number"),
    _case(tokenlean.EstimateCounter, {"indent": -1.0}, ValueError, r"indent .*>= 0"),
    _case(tokenlean.TiktokenCounter, {"encoding": "p50k"}, ValueError, "encoding must be one of"),
    _case(tokenlean.TiktokenCounter, {"encoding": ["o200k_base"]}, ValueError, "encoding"),
    _case(tokenlean.TiktokenCounter, {"vocab_path": 5}, WRONG, "vocab_path must be a path"),
    _case(tokenlean.count_request, {"messages": "hi", "counter": None}, WRONG, "messages must"),
    _case(tokenlean.count_request, {"messages": [1], "counter": None}, WRONG, r"messages\[0\]"),
    _case(
        tokenlean.count_request,
        {"messages": [], "counter": NOT_A_COUNTER},
        TypeError,
        r"counter must be a TokenCounter with a count\(text\)",
    ),
    _case(
        tokenlean.count_request,
        {"messages": [], "counter": tokenlean.EstimateCounter(), "system": 5},
        WRONG,
        "system must be a string",
    ),
    _case(
        tokenlean.count_request,
        {"messages": [], "counter": tokenlean.EstimateCounter(), "tools": "x"},
        WRONG,
        "tools must be a sequence",
    ),
    # loops
    _case(tokenlean.LoopDetector, {"repeat_after": "3"}, WRONG, "repeat_after must be an int"),
    _case(tokenlean.LoopDetector, {"max_period": 1.5}, WRONG, "max_period must be an int"),
    _case(tokenlean.LoopDetector, {"exempt_if": 3}, WRONG, "exempt_if must be callable"),
    _case(tokenlean.LoopDetector, {"patterns": "repeat"}, WRONG, "patterns .*not a bare string"),
    _case(tokenlean.LoopDetector, {"exempt_tools": [1]}, WRONG, "exempt_tools must hold strings"),
    _case(tokenlean.build_steps, {"messages": "x"}, WRONG, "messages must be a sequence"),
    _case(tokenlean.build_steps, {"messages": [1]}, WRONG, r"messages\[0\] must be a tokenlean"),
    _case(tokenlean.build_steps, {"messages": [], "first_index": -1}, ValueError, "first_index"),
    _case(tokenlean.detect_stuck, {"steps": "x"}, WRONG, "steps must be a sequence of Step"),
    _case(tokenlean.detect_stuck, {"steps": [1]}, WRONG, r"steps\[0\] must be a Step dict"),
    _case(tokenlean.loop_signals, {"steps": None}, WRONG, "steps must be a sequence"),
    _case(tokenlean.loop_signals, {"steps": [{"action": "x"}]}, WRONG, r"steps\[0\]"),
    # shortening
    _case(tokenlean.shorten, {"text": "x", "max_tokens": "5"}, WRONG, "max_tokens must be an int"),
    _case(tokenlean.shorten, {"text": "x", "max_tokens": 0}, ValueError, "max_tokens"),
    _case(tokenlean.shorten, {"text": "x", "query": 5}, WRONG, "query must be text"),
    _case(tokenlean.shorten, {"text": "x", "context": 5}, WRONG, "context must be a string"),
    _case(tokenlean.shorten, {"text": "x", "kind": "yaml"}, ValueError, "kind must be one of"),
    _case(tokenlean.shorten, {"text": "x", "seen": 5}, WRONG, "seen must be a set of lines"),
    _case(tokenlean.shorten, {"text": "x", "seen": "abc"}, WRONG, "seen must be"),
    _case(tokenlean.shorten, {"text": "x", "retrieval": "o1"}, WRONG, "retrieval must be"),
    _case(tokenlean.shorten, {"text": "x", "counter": NOT_A_COUNTER}, TypeError, "counter must"),
    _case(tokenlean.shorten, {"text": "x", "options": {}}, WRONG, "options must be a Shorten"),
    _case(ShortenSettings, {"max_tokens": "10"}, WRONG, "max_tokens must be an int"),
    _case(ShortenSettings, {"code_keep_percent": 150}, ValueError, "code_keep_percent"),
    _case(OutputShorteningSettings, {"min_tokens": -1}, ValueError, "min_tokens must be a non"),
    _case(OutputShorteningSettings, {"only": "bash"}, ValueError, "only and never take"),
    _case(InputShorteningSettings, {"head_lines": "8"}, ValueError, "head_lines must be a non"),
    _case(Retrieval, {"handle": 5}, WRONG, "handle must be a string"),
    _case(Retrieval, {"handle": "o1", "tool": "read it"}, ValueError, "tool must be an identifier"),
    _case(error_lines, {"text": None}, WRONG, "text must be a string"),
    _case(query_terms, {"query": 5}, WRONG, "query must be text"),
    _case(query_terms, {"query": "x", "limit": 0}, ValueError, "limit must be an int >= 1"),
    _case(query_terms, {"query": "x", "code_only": "yes"}, WRONG, "code_only must be True or"),
    _case(query_text, {"query": 5.5}, WRONG, "query must be text"),
    # token saving
    _case(tokenlean.compress_tool_output, {"content": None}, WRONG, "content must be a string"),
    _case(
        tokenlean.compress_tool_output,
        {"content": "x", "threshold_chars": "5"},
        WRONG,
        "threshold_chars must be an int",
    ),
    _case(tokenlean.compress_tool_output, {"content": "x", "head_chars": -1}, ValueError, "head"),
    _case(tokenlean.make_anthropic_classifier, {"client": None}, ValueError, r"messages\.create"),
    _case(
        tokenlean.make_anthropic_classifier,
        {"client": FakeAnthropic(), "target_keep_ratio": 2},
        ValueError,
        "target_keep_ratio",
    ),
    _case(
        tokenlean.make_anthropic_classifier,
        {"client": FakeAnthropic(), "timeout": -1},
        ValueError,
        "timeout must be a finite number > 0",
    ),
    _case(
        tokenlean.make_anthropic_classifier,
        {"client": FakeAnthropic(), "model": 3},
        WRONG,
        "model must be a string",
    ),
    # the transcript contract
    _case(tokenlean.Message, {"role": "bot"}, ValueError, "role must be one of"),
    _case(tokenlean.Message, {"role": "user", "content": 5}, WRONG, "content must be text"),
    _case(tokenlean.Message, {"role": "user", "id": 5}, WRONG, "id must be a string"),
    _case(tokenlean.Message, {"role": "assistant", "tool_calls": [1]}, WRONG, "tool_calls must"),
    _case(tokenlean.ToolCall, {"id": 1, "name": "x"}, WRONG, "id must be a string"),
    _case(tokenlean.ToolCall, {"id": "c", "name": "x", "args": "a=1"}, WRONG, "args must be"),
    _case(
        tokenlean.Edit,
        {
            "index": -1,
            "message_id": None,
            "new_content": None,
            "reason": "r",
            "tokens_before": 1,
            "tokens_after": 0,
        },
        ValueError,
        "index must be an int >= 0",
    ),
    # originals
    _case(InMemoryOriginalStore, {"max_bytes": "5"}, WRONG, "max_bytes must be an int"),
    _case(LangGraphOriginalStore, {"store": object()}, WRONG, "store must be a LangGraph"),
    _case(excerpt, {"text": None}, WRONG, "text must be a string"),
    _case(excerpt, {"text": "x", "lines": 5}, WRONG, "lines must be a string"),
    _case(excerpt, {"text": "x", "pattern": 5}, WRONG, "pattern must be a string"),
    _case(excerpt, {"text": "x", "context": -1}, ValueError, "context must be an int >= 0"),
    _case(excerpt, {"text": "x", "max_chars": 0}, ValueError, "max_chars must be an int >= 1"),
]


@pytest.mark.parametrize(("call", "kwargs", "error", "pattern"), CORE_CASES)
def test_bad_arguments_are_refused_naming_the_parameter(
    call: Callable[..., Any], kwargs: dict[str, Any], error: type[Exception], pattern: str
) -> None:
    with pytest.raises(error, match=pattern):
        call(**kwargs)


def test_a_wrong_kind_is_both_a_type_error_and_a_value_error() -> None:
    for caught in (TypeError, ValueError):
        with pytest.raises(caught, match="max_tokens must be an int"):
            tokenlean.shorten("x", max_tokens="5")  # type: ignore[arg-type]


def test_messages_show_what_was_given_briefly() -> None:
    with pytest.raises(ValueError) as caught:
        checks.integer("9" * 500, "n")
    assert len(str(caught.value)) < 160 and "(str)" not in str(caught.value)
    with pytest.raises(TypeError, match=r"got \[1, 2\] \(list\)"):
        checks.text([1, 2], "name")
    assert checks.integer(3, "n", at_least=1) == 3
    assert checks.number(2, "x", above=0) == 2.0
    with pytest.raises(ValueError, match="x must be a finite number > 0"):
        checks.number(math.nan, "x", above=0)


def test_good_arguments_still_work() -> None:
    report = tokenlean.shorten("a\nb\n", query={"command": "ls"}, seen={"a"}, max_tokens=5)
    assert report.text
    assert tokenlean.count_request([Message("user", "hi")], tokenlean.EstimateCounter()) > 0
    assert tokenlean.LoopDetector(exempt_tools=["sleep"], patterns=("repeat",)).patterns == (
        "repeat",
    )
    assert ToolCall("c1", "bash", {"cmd": "ls"}).args == {"cmd": "ls"}


# Public callables that take no arguments to check, or are records built by tokenlean itself.
NOT_CHECKED = {
    "default_counter": "takes no arguments",
    "TokenCounter": "a protocol, checked where a counter is accepted",
    "WordClassifier": "a type alias, checked where a classifier is accepted",
    "VocabularyNotFoundError": "an exception",
    "Detection": "a result record",
    "ShortenReport": "a result record",
    "TokenSavingStats": "a result record",
    "Step": "a TypedDict, checked where steps are accepted",
    "Omission": "a result record",
    "Kind": "a type alias",
    "Reason": "a type alias",
    "ShortenOptions": "the earlier name of ShortenSettings, checked as it",
    "OutputShorteningPolicy": "the earlier name of OutputShorteningSettings, checked as it",
    "ArgumentPolicy": "the earlier name of InputShorteningSettings, checked as it",
    "FirstSightPlan": "a result record",
    "InputPlan": "a result record",
    "SeenLog": "the planner's log of lines shown, made by the planner",
    "KindChoice": "a type alias",
    "OfferTool": "a type alias",
    "Seen": "the planner's record of what a prompt shows, made by the planner",
    "add_visible": "a step of tokenlean.pipeline's planner, given only what the planner made",
    "plan_first_sight": "a step of tokenlean.pipeline's planner, given only what it made",
    "plan_inputs": "a step of tokenlean.pipeline's planner, given only what it made",
    "readable": "a step of tokenlean.pipeline's planner, given only what it made",
}


def _public(module: Any, names: list[str]) -> set[str]:
    return {n for n in names if callable(getattr(module, n)) and not n.startswith("_")}


def test_every_public_callable_is_covered() -> None:
    covered = {getattr(case.values[0], "__name__", "") for case in CORE_CASES}
    public = _public(tokenlean, tokenlean.__all__)
    shortening = importlib.import_module("tokenlean.shorten")  # the attribute is the function
    public |= _public(shortening, shortening.__all__)
    missing = public - covered - set(NOT_CHECKED)
    assert not missing, f"add bad-argument cases for {sorted(missing)}"
