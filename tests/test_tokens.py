from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.data import TOKENIZERS, TOOL_OUTPUTS, TRAJECTORIES, needs_cl100k, needs_vocab
from tokenlean.tokens import (
    DEFAULT_COUNTER,
    MESSAGE_OVERHEAD,
    TIKTOKEN_CACHE_KEYS,
    EstimateCounter,
    TiktokenCounter,
    VocabularyNotFoundError,
    count_request,
    find_vocabulary,
    load_encoding,
    memoized,
    message_tokens,
)
from tokenlean.transcript import Message, ToolCall


def test_exact_counts_match_known_values(o200k: TiktokenCounter) -> None:
    assert o200k.count("") == 0
    assert o200k.count("hello world") == 2
    assert o200k.count("<|endoftext|>") > 1  # special-token text is ordinary text


@needs_cl100k
def test_cl100k_loads_from_local_folder() -> None:
    counter = TiktokenCounter("cl100k_base", vocab_path=TOKENIZERS)
    assert counter.count("hello world") == 2


def test_missing_vocabulary_fails_fast_without_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOKENLEAN_TIKTOKEN_DIR", raising=False)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))
    start = time.monotonic()
    with pytest.raises(VocabularyNotFoundError, match="never downloads"):
        TiktokenCounter("o200k_base", vocab_path=tmp_path)
    assert time.monotonic() - start < 5  # a hang would be minutes; this only guards a download


def test_wrong_file_is_rejected(tmp_path: Path) -> None:
    fake = tmp_path / "o200k_base.tiktoken"
    fake.write_text("aGk= 0\n")
    with pytest.raises(ValueError, match="sha256"):
        load_encoding("o200k_base", fake)


def test_unknown_encoding_is_rejected() -> None:
    with pytest.raises(ValueError, match="encoding must be one of"):
        load_encoding("p50k_base", TOKENIZERS)  # type: ignore[arg-type]


@needs_vocab
def test_vocabulary_found_in_tiktokens_own_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what tiktoken downloaded once, on a machine with internet access, counts exactly here
    monkeypatch.delenv("TOKENLEAN_TIKTOKEN_DIR", raising=False)
    cached = tmp_path / TIKTOKEN_CACHE_KEYS["o200k_base"]
    cached.write_bytes((TOKENIZERS / "o200k_base.tiktoken").read_bytes())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert find_vocabulary("o200k_base") == cached
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken's way to switch its cache off
    with pytest.raises(VocabularyNotFoundError):
        find_vocabulary("o200k_base")


@needs_vocab
def test_vocabulary_found_through_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENLEAN_TIKTOKEN_DIR", str(TOKENIZERS))
    assert find_vocabulary("o200k_base") == TOKENIZERS / "o200k_base.tiktoken"


def _shared_texts() -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {}
    for folder in sorted(p for p in TOOL_OUTPUTS.iterdir() if p.is_dir()):
        kinds[folder.name] = [p.read_text(errors="replace") for p in sorted(folder.iterdir())]
    prose, outputs = [], []
    for path in sorted(TRAJECTORIES.glob("*/*.json"))[:20]:
        for message in json.loads(path.read_text())["messages"]:
            text = message.get("content") or ""
            if len(text) >= 200:
                (outputs if message["role"] == "tool" else prose).append(text)
    kinds["trajectory_prose"], kinds["trajectory_tool_output"] = prose, outputs
    return kinds


def test_estimate_beats_chars_over_four_on_every_kind(o200k: TiktokenCounter) -> None:
    estimate = EstimateCounter()
    for kind, texts in _shared_texts().items():
        exact = [o200k.count(t) for t in texts]
        naive = sum(abs(len(t) / 4 - n) / n for t, n in zip(texts, exact, strict=True))
        ours = sum(abs(estimate.count(t) - n) / n for t, n in zip(texts, exact, strict=True))
        assert ours < naive, kind


def test_estimate_handles_unicode_and_empty() -> None:
    estimate = EstimateCounter()
    assert estimate.count("") == 0
    assert estimate.count("日本語のテキスト") >= 4
    assert estimate.count("\udcff broken surrogate") > 0


def test_request_counts_cover_system_and_tool_schemas() -> None:
    counter = EstimateCounter()
    messages = [
        Message(role="user", content="fix the bug"),
        Message(role="assistant", tool_calls=(ToolCall("c1", "bash", {"command": "ls -la"}),)),
    ]
    bare = count_request(messages, counter)
    assert bare == sum(message_tokens(m, counter) for m in messages)
    with_system = count_request(messages, counter, system="You are a careful engineer.")
    assert with_system > bare + MESSAGE_OVERHEAD
    schema = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
    assert count_request(messages, counter, tools=[schema]) > bare
    assert message_tokens(messages[1], counter) > MESSAGE_OVERHEAD  # the call's args count


def test_each_user_of_a_counter_gets_a_memo_of_its_own() -> None:
    first, second = memoized(DEFAULT_COUNTER), memoized(DEFAULT_COUNTER)
    assert first is not second  # no memo shared through the module: each owner has its own
    assert memoized(first) is first
    text = "word " * 40
    assert first.count(text) == second.count(text) == DEFAULT_COUNTER.count(text)
    other = memoized(EstimateCounter(word=2.0))
    assert other.count(text) == EstimateCounter(word=2.0).count(text) != first.count(text)

    class Counter:
        def count(self, text: str) -> int:
            return len(text)

    counter = Counter()
    assert memoized(counter) is not memoized(counter)
    assert memoized(counter).count(text) == len(text)


def test_one_default_counter_for_every_threshold() -> None:
    """Every capability counts with DEFAULT_COUNTER when given none, whatever vocabularies the
    machine has (a decision must not depend on them)."""
    from tokenlean.langchain import (
        ContextEditorMiddleware,
        TokenBudgetMiddleware,
        TokenSavingMiddleware,
        ToolOutputShorteningMiddleware,
    )
    from tokenlean.shorten import shorten

    assert TokenSavingMiddleware().token_counter is DEFAULT_COUNTER
    assert TokenBudgetMiddleware(token_budget=1000).token_counter is DEFAULT_COUNTER
    assert ToolOutputShorteningMiddleware()._gate.counter.counter is DEFAULT_COUNTER
    assert ContextEditorMiddleware().counter.counter is DEFAULT_COUNTER
    text = "line of output\n" * 2000
    report = shorten(text, max_tokens=50)
    assert report.tokens_before == DEFAULT_COUNTER.count(text)
