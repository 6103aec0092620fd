"""Sessions and the cost estimate behind the log line and ``GET /tokenlean/stats``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tokenlean import _checkpoints
from tokenlean.cost import ANTHROPIC, OPENAI
from tokenlean.proxy import Prepared, StatsBook, _sessions, default_rewriter, summary_lines
from tokenlean.proxy import _rewrite as rewrite_module
from tokenlean.proxy import _stats as stats_module
from tokenlean.proxy._rewrite import prepare
from tokenlean.proxy._scan import read_body, scan_body
from tokenlean.proxy._sessions import BlockCounter, session_key
from tokenlean.proxy._totals import log_line
from tokenlean.raw import RawSettings, _reading, rewrite_request

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


def _book() -> StatsBook:
    return StatsBook({"anthropic": ANTHROPIC, "openai_chat": OPENAI, "openai_responses": OPENAI})


SALT = b"a test salt"
LOG = "".join(f"test_{i} PASSED in 0.0{i % 10}s\n" for i in range(300))


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


def test_a_rewritten_request_counts_the_rewrites_own_figures():
    """The rewrite has counted the request before and after; the statistics take its figures
    (they used to recount both bodies with their own estimate)."""
    book = _book()
    original = _body(_turns(2, "same log line\n" * 300))
    shortened = _body(_turns(2, "same log line (x300)"))
    outcome = Outcome(shortened, 1000, 10, results_shortened=2)
    prepared = Prepared(json.dumps(original).encode(), json.dumps(shortened).encode(), outcome)
    record = book.record("anthropic", {}, prepared, 200)
    assert record is not None
    t = record.totals
    assert (t.tokens_in, t.tokens_sent) == (1000, 10)
    assert (t.billed_in, t.billed_sent) == (1.25 * 1000, 1.25 * 10)  # nothing cached yet
    assert "2 results + 0 inputs shortened" in log_line("POST", "/v1/messages", record)
    snapshot = book.snapshot()
    assert snapshot["total"]["results_shortened"] == 2
    assert "1 request in 1 session," in summary_lines(snapshot)[0]


def test_session_key_prefers_explicit_then_client_then_first_message():
    body = {"messages": [{"role": "user", "content": "task"}], "metadata": {"user_id": "u_1"}}
    by_header = session_key("anthropic", {"x-tokenlean-session": "s"}, body, salt=SALT)
    by_metadata = session_key("anthropic", {}, body, salt=SALT)
    by_message = session_key("anthropic", {}, {"messages": body["messages"]}, salt=SALT)
    assert [source for _, source in (by_header, by_metadata, by_message)] == [
        "header",
        "metadata.user_id",
        "first user message",
    ]
    assert len({key for key, _ in (by_header, by_metadata, by_message)}) == 3
    assert "u_1" not in by_metadata[0]  # shown hashed
    chat = {"messages": [{"role": "user", "content": "task"}], "prompt_cache_key": "conv-9"}
    assert session_key("openai_chat", {}, chat, salt=SALT)[1] == "prompt_cache_key"
    # the same first message in another API is another session
    other = session_key("openai_chat", {}, {"messages": body["messages"]}, salt=SALT)
    assert other[0] != by_message[0]


def test_the_default_rewriter_is_tokenlean_raw(tmp_path: Path):
    body = _body(_turns(2, LOG))
    expected = rewrite_request("anthropic", body, settings=RawSettings(originals_dir=tmp_path))
    got = default_rewriter(tmp_path)("anthropic", body)
    assert expected is not None and got is not None
    assert got.body == expected.body


def _prepared(tmp_path: Path, turns: int) -> Prepared:
    body = _body(_turns(turns, LOG))
    prepared = prepare(default_rewriter(tmp_path), "anthropic", json.dumps(body).encode())
    assert prepared.outcome is not None and prepared.parsed
    return prepared


def test_the_rewrites_figures_and_its_cached_share(tmp_path: Path):
    """Each request's tokens are the rewrite's; its billed estimate applies the share of its
    blocks that an earlier request of the session had (identical blocks, after the rewrite on
    the sent side: the rewrite keeps what it sent, so the sent prefix stays cached)."""
    book = _book()
    records = [book.record("anthropic", {}, _prepared(tmp_path, n), 200) for n in (2, 3)]
    first, second = (r.totals for r in records if r is not None)
    outcome = _prepared(tmp_path, 3).outcome
    assert outcome is not None
    assert (second.tokens_in, second.tokens_sent) == (outcome.tokens_before, outcome.tokens_after)
    assert second.results_shortened == outcome.results_shortened == 3
    assert first.billed_sent == 1.25 * first.tokens_sent  # nothing cached yet
    # the second request re-sends the first one's blocks, on both sides of the rewrite
    assert 0.1 * second.tokens_sent < second.billed_sent < 0.6 * 1.25 * second.tokens_sent
    assert 0.1 * second.tokens_in < second.billed_in < 0.6 * 1.25 * second.tokens_in


def test_an_unrewritten_request_is_counted_from_its_blocks(tmp_path: Path):
    """With no figures from a rewrite, in and sent are the same estimate of the blocks."""
    body = _body(_turns(1, "ok"))
    prepared = prepare(default_rewriter(tmp_path), "anthropic", json.dumps(body).encode())
    assert prepared.outcome is None and prepared.body is not None
    record = _book().record("anthropic", {}, prepared, 200)
    assert record is not None
    blocks = BlockCounter().blocks("anthropic", prepared.body)
    assert record.totals.tokens_in == record.totals.tokens_sent == sum(t for _, t in blocks)


@pytest.mark.parametrize("turns", [1, 3])
def test_the_sent_blocks_are_those_of_the_forwarded_bytes(tmp_path: Path, turns: int):
    """The statistics read the rewritten body's values instead of parsing what was sent; the
    blocks (fingerprints and tokens) are the same either way."""
    prepared = _prepared(tmp_path, turns)
    assert prepared.body is not None and prepared.outcome is not None
    counter = BlockCounter()
    blocks_in = counter.blocks("anthropic", prepared.body)
    sent = counter.rewritten("anthropic", prepared.body, blocks_in, prepared.outcome.body)
    forwarded = scan_body(prepared.content, "messages")
    assert forwarded is not None
    assert sent == BlockCounter().blocks("anthropic", forwarded)
    assert sent[0] == blocks_in[0] and sent != blocks_in  # the head kept, a result shortened


def test_a_body_is_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    parses: list[bytes] = []

    def counted(data: bytes, list_key: str) -> Any:
        parses.append(data)
        return scan_body(data, list_key)

    def read(data: bytes, list_key: str) -> Any:
        parses.append(data)
        return read_body(data, list_key)

    monkeypatch.setattr(rewrite_module, "read_body", read)
    monkeypatch.setattr(stats_module, "scan_body", counted)
    prepared = _prepared(tmp_path, 2)
    assert _book().record("anthropic", {}, prepared, 200) is not None
    assert parses == [prepared.raw]
    # forwarded without a rewrite, the body is parsed after the answer, once
    parses.clear()
    assert _book().record("anthropic", {}, Prepared(prepared.raw, prepared.raw), 200)
    assert parses == [prepared.raw]


def test_the_session_table_is_bounded_in_bytes():
    """Each session keeps the block fingerprints of its last prompts: a thousand sessions of
    long histories held hundreds of megabytes however few bytes the cap allowed."""
    book = StatsBook({"anthropic": ANTHROPIC}, max_bytes=256 * 1024)
    body = _unchanged(_body(_turns(300, "ok")))
    for k in range(12):
        for _ in range(8):  # the recent prompts a session keeps
            assert book.record("anthropic", {"x-tokenlean-session": f"s{k}"}, body, 200)
    assert book.history_bytes <= 256 * 1024  # before: about 900 KiB for the 12 sessions
    snapshot = book.snapshot()
    assert 1 <= len(snapshot["sessions"]) < 12 and snapshot["sessions_dropped"] >= 1
    assert snapshot["total"]["requests"] == 96  # a dropped session's counts stay in the total


def _looked_up(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts of the blocks a counter looks up one by one from now on."""
    looked: list[str] = []
    one = BlockCounter._block

    def counted(self: BlockCounter, value: Any, text: str) -> Any:
        looked.append(text)
        return one(self, value, text)

    monkeypatch.setattr(BlockCounter, "_block", counted)
    return looked


def test_a_re_sent_history_is_counted_from_the_last_lists_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Counting a history sent again looks up only the head and the messages that are new (or
    changed: a moved breakpoint), received and sent; the blocks are a fresh counter's."""
    rewriter = default_rewriter(tmp_path)
    counter = BlockCounter()

    def count(turns: int) -> tuple[list[Any], list[Any], Prepared]:
        prepared = prepare(rewriter, "anthropic", json.dumps(_body(_turns(turns, LOG))).encode())
        assert prepared.body is not None and prepared.outcome is not None
        blocks_in = counter.blocks("anthropic", prepared.body)
        sent = counter.rewritten("anthropic", prepared.body, blocks_in, prepared.outcome.body)
        return blocks_in, sent, prepared

    count(6)
    looked = _looked_up(monkeypatch)
    blocks_in, sent, prepared = count(7)
    # each list: the head, the newest message of last time (its breakpoint moved) and two new
    assert len(looked) == 2 * 4
    monkeypatch.undo()
    assert prepared.body is not None and prepared.outcome is not None
    fresh = BlockCounter()
    assert blocks_in == fresh.blocks("anthropic", prepared.body)
    assert sent == fresh.rewritten("anthropic", prepared.body, blocks_in, prepared.outcome.body)


def test_a_counted_list_is_charged_the_texts_it_holds(tmp_path: Path):
    counter = BlockCounter()
    raw = json.dumps(_body(_turns(2, "y" * 500_000))).encode()
    prepared = prepare(default_rewriter(tmp_path), "anthropic", raw)
    assert prepared.body is not None
    counter.blocks("anthropic", prepared.body)
    assert counter._received.size >= 2 * 500_000


def test_histories_of_one_opening_sent_in_turn_are_each_counted_from_their_own_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A team's agents open alike ("fix the bug") and go on at once: each history sent again
    looks up only its head and what is new (with one kept list an opening, each pushed the
    other's out and every message of both was looked up)."""
    rewriter = default_rewriter(tmp_path)
    counter = BlockCounter()

    def count(turns: int, who: str) -> None:
        body = json.dumps(_body(_turns(turns, f"{who}: {LOG}"))).encode()
        prepared = prepare(rewriter, "anthropic", body)
        assert prepared.body is not None and prepared.outcome is not None
        blocks_in = counter.blocks("anthropic", prepared.body)
        counter.rewritten("anthropic", prepared.body, blocks_in, prepared.outcome.body)

    for who in "abc":
        count(6, who)
    looked = _looked_up(monkeypatch)
    for who in "abc":
        count(7, who)
        # each list: the head, the newest message of last time (its breakpoint moved) and two new
        assert len(looked) == 2 * 4
        looked.clear()


def test_a_hundred_histories_of_one_opening_each_find_their_own_lists_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """More conversations of one opening than an opening kept lists (a team of a hundred agents
    with one task text), each sent again in turn through the rewrite and the counter: the
    reading, the digests and the counter each compare a history with its own list only (found
    by its second message), and the counter looks up only what is new (filed by the first
    message, each was compared with every list of the opening, and past 64 of them pushed out
    and read in full)."""
    rewriter = default_rewriter(tmp_path)
    counter = BlockCounter()
    histories = [
        [
            {"role": "user", "content": "fix the bug"},
            {"role": "assistant", "content": f"agent {k} starts"},
            {"role": "user", "content": f"go on, agent {k}"},
        ]
        for k in range(100)
    ]

    def count(history: list[Any]) -> None:
        prepared = prepare(rewriter, "anthropic", json.dumps(_body(history)).encode())
        assert prepared.body is not None and prepared.outcome is None  # nothing to shorten
        counter.blocks("anthropic", prepared.body)

    for history in histories:
        count(history)
    compared = {module: _compared(monkeypatch, module) for module in _KEPT_BY_OBJECT}
    looked = _looked_up(monkeypatch)
    for k, history in enumerate(histories):
        history += [
            {"role": "assistant", "content": f"step of {k}"},
            {"role": "user", "content": "ok"},
        ]
        count(history)
        # the head and the two new messages
        assert len(looked) == 3
        # each list found at once: the messages read, their digests, the counter's
        assert {module: len(calls) for module, calls in compared.items()} == _ONE_LIST_EACH
        looked.clear()
        for calls in compared.values():
            calls.clear()


_KEPT_BY_OBJECT = (_reading, _checkpoints, _sessions)
_ONE_LIST_EACH = {_reading: 1, _checkpoints: 1, _sessions: 1}


def _compared(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[object]:
    """The kept lists ``module`` compares a list with from now on (its ``same_objects``)."""
    calls: list[object] = []
    one = module.same_objects

    def counted(kept: Any, given: Any) -> int:
        calls.append(kept)
        return one(kept, given)  # type: ignore[no-any-return]

    monkeypatch.setattr(module, "same_objects", counted)
    return calls
