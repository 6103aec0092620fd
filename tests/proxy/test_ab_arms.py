"""The A/B arms' parts: assignment, what a request's newest turn holds, finished sessions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenlean.ab import read_sessions
from tokenlean.cost import ANTHROPIC
from tokenlean.proxy._ab import NewestTurn, arm_of, newest_turn
from tokenlean.proxy._arms import ArmBook, priced_request
from tokenlean.proxy._usage import Usage


def test_arm_shares_follow_the_setting():
    labels = [f"{i:012x}" for i in range(4000)]
    assert {arm_of(label, 0.0) for label in labels} == {"tokenlean"}
    assert {arm_of(label, 1.0) for label in labels} == {"control"}
    controls = sum(arm_of(label, 0.25) == "control" for label in labels)
    assert 850 < controls < 1150  # 1000 expected; the hash spreads labels evenly


def test_newest_turn_counts_errors_and_read_original_calls_of_the_last_reply_only():
    old_call = {"type": "tool_use", "id": "a", "name": "read_original", "input": {}}
    calls = [
        {"type": "tool_use", "id": "b", "name": "mcp__tokenlean__read_original", "input": {}},
        {"type": "tool_use", "id": "c", "name": "bash", "input": {}},
    ]
    results = [
        {"type": "tool_result", "tool_use_id": "b", "content": "x"},
        {"type": "tool_result", "tool_use_id": "c", "content": "boom", "is_error": True},
    ]
    body = {"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [old_call]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a",
                                      "content": "e", "is_error": True}]},
        {"role": "assistant", "content": calls},
        {"role": "user", "content": results},
    ]}  # fmt: skip
    assert newest_turn("anthropic", body) == NewestTurn(2, 1, 1)
    chat = {"messages": [
        {"role": "assistant", "tool_calls": [{"id": "x", "function": {"name": "read_original"}}]},
        {"role": "tool", "tool_call_id": "x", "content": "..."},
    ]}  # fmt: skip
    assert newest_turn("openai_chat", chat) == NewestTurn(1, 0, 1)
    responses = {"input": [
        {"type": "function_call", "name": "read_original", "call_id": "x"},
        {"type": "function_call_output", "call_id": "x", "output": "..."},
    ]}  # fmt: skip
    assert newest_turn("openai_responses", responses) == NewestTurn(1, 0, 1)
    failed = {"functionResponse": {"name": "r", "response": {"error": "no"}}}
    gemini = {"contents": [
        {"role": "model", "parts": [{"functionCall": {"name": "read_original"}}]},
        {"role": "user", "parts": [failed]},
    ]}  # fmt: skip
    assert newest_turn("gemini", gemini) == NewestTurn(1, 1, 1)


def test_usage_is_priced_per_kind_of_token():
    usage = Usage(output_tokens=100, input_tokens=1000, cached_tokens=600, written_tokens=300)
    one = priced_request(usage, ANTHROPIC, 200, NewestTurn(), 0.5)
    assert (one.input_tokens, one.cache_read_tokens, one.cache_write_tokens) == (100, 600, 300)
    # Anthropic's preset: plain 1, read 0.1, write 1.25, output 5 (in plain input tokens).
    assert one.cost == 100 * 1 + 600 * 0.1 + 300 * 1.25 + 100 * 5
    assert one.unpriced == 1  # a preset has no dollar price
    assert priced_request(None, ANTHROPIC, 200, NewestTurn(), 0.1).usage_unknown == 1


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_sessions_finish_when_idle_or_evicted_and_a_returning_one_is_a_new_part(tmp_path: Path):
    now = [1000.0]
    log = tmp_path / "ab.jsonl"
    book = ArmBook(0.5, log, idle=60, max_sessions=2, clock=lambda: now[0])
    usage = Usage(output_tokens=1, input_tokens=10)
    one = priced_request(usage, ANTHROPIC, 200, NewestTurn(), 0.0)
    for label in ("aaa", "bbb"):
        book.observe(label, "anthropic", "m", one)
    now[0] += 61
    book.sweep()
    assert [(x["session"], x["ended"]) for x in _lines(log)] == [("aaa", "idle"), ("bbb", "idle")]
    for label in ("aaa", "ccc", "ddd"):  # a third open session drops the least recent
        book.observe(label, "anthropic", "m", one)
    assert _lines(log)[-1]["session"] == "aaa" and _lines(log)[-1]["ended"] == "evicted"
    book.close()
    assert [x["ended"] for x in _lines(log)][-2:] == ["shutdown", "shutdown"]
    read = read_sessions([log])
    requests = {s.key: s.sums["requests"] for s in read.sessions}
    assert requests == {"aaa": 2.0, "bbb": 1.0, "ccc": 1.0, "ddd": 1.0}  # aaa's two parts summed
    assert "tokenlean_ab_sessions_total" in book.exposition()
