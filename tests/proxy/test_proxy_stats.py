"""Sessions and the cost estimate behind the log line and ``GET /tokenlean/stats``."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

from tokenlean.cost import ANTHROPIC, OPENAI
from tokenlean.proxy import Prepared, StatsBook, default_rewriter, summary_lines
from tokenlean.proxy.sessions import session_key
from tokenlean.proxy.stats import log_line

from .proxy_support import Outcome


def _turns(n: int, result: str) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": "fix the bug"}]
    for i in range(n):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": f"t{i}",
                        "name": "bash",
                        "input": {"cmd": f"step {i}"},
                    }
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": result}],
            }
        )
    # Like Claude Code: the cache breakpoint sits on the newest block only.
    messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return messages


def _body(messages: list[Any]) -> dict[str, Any]:
    return {"model": "claude-test", "system": "You are a coding agent.", "messages": messages}


def _unchanged(body: dict[str, Any]) -> Prepared:
    raw = json.dumps(body).encode()
    return Prepared(raw, raw)


def test_a_moved_cache_breakpoint_still_counts_as_a_cached_prefix():
    book = StatsBook({"anthropic": ANTHROPIC, "openai_chat": OPENAI, "openai_responses": OPENAI})
    first = book.record("anthropic", {}, _unchanged(_body(_turns(3, "ok\n" * 50))), 200)
    second = book.record("anthropic", {}, _unchanged(_body(_turns(4, "ok\n" * 50))), 200)
    assert first is not None and second is not None
    assert first.session == second.session
    assert first.totals.billed_in == 1.25 * first.totals.tokens_in  # nothing cached yet
    cached = first.totals.tokens_in
    new = second.totals.tokens_in - cached
    assert second.totals.billed_in == pytest.approx(0.1 * cached + 1.25 * new)


def test_savings_are_the_difference_between_what_came_in_and_what_went_out():
    book = StatsBook({"anthropic": ANTHROPIC, "openai_chat": OPENAI, "openai_responses": OPENAI})
    original = _body(_turns(2, "same log line\n" * 300))
    shortened = _body(_turns(2, "same log line (x300)"))
    outcome = Outcome(shortened, 1000, 10, results_shortened=2)
    prepared = Prepared(json.dumps(original).encode(), json.dumps(shortened).encode(), outcome)
    record = book.record("anthropic", {}, prepared, 200)
    assert record is not None
    t = record.totals
    assert t.tokens_sent < t.tokens_in
    assert t.billed_saved == pytest.approx(1.25 * (t.tokens_in - t.tokens_sent))
    assert "2 results + 0 inputs shortened" in log_line("POST", "/v1/messages", record)
    snapshot = book.snapshot()
    assert snapshot["total"]["results_shortened"] == 2
    assert "1 requests in 1 sessions" in summary_lines(snapshot)[0]


def test_session_key_prefers_explicit_then_client_then_first_message():
    body = {"messages": [{"role": "user", "content": "task"}], "metadata": {"user_id": "u_1"}}
    by_header = session_key("anthropic", {"x-tokenlean-session": "s"}, body)
    by_metadata = session_key("anthropic", {}, body)
    by_message = session_key("anthropic", {}, {"messages": body["messages"]})
    assert [source for _, source in (by_header, by_metadata, by_message)] == [
        "header",
        "metadata.user_id",
        "first user message",
    ]
    assert len({key for key, _ in (by_header, by_metadata, by_message)}) == 3
    assert "u_1" not in by_metadata[0]  # shown hashed
    chat = {"messages": [{"role": "user", "content": "task"}], "prompt_cache_key": "conv-9"}
    assert session_key("openai_chat", {}, chat)[1] == "prompt_cache_key"
    # the same first message in another API is another session
    assert session_key("openai_chat", {}, {"messages": body["messages"]})[0] != by_message[0]


def test_the_default_rewriter_is_tokenlean_raw_when_it_is_there():
    present = importlib.util.find_spec("tokenlean.raw") is not None
    assert (default_rewriter(None) is not None) == present
