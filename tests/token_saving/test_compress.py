"""compress_tool_output, TokenSavingStats and the framework-free token-saving planner."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenlean import TokenSavingStats, compress_tool_output
from tokenlean.token_saving._head_tail import content_digest, text_parts
from tokenlean.token_saving._plan import plan_compressions
from tokenlean.token_saving._policy import CompressionSettings, Stage
from tokenlean.token_saving._words import make_heuristic_classifier
from tokenlean.tokens import EstimateCounter
from tokenlean.transcript import Message, ToolCall

COUNTER = EstimateCounter()

# -- compress_tool_output ------------------------------------------------------------------


def test_compress_tool_output_uses_the_reference_format() -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(5000))
    out = compress_tool_output(text)
    assert out == f"{text[:900]}\n\n[... 3400 chars truncated ...]\n\n{text[-700:]}"


def test_compress_tool_output_threshold_is_inclusive() -> None:
    assert compress_tool_output("x" * 1800) == "x" * 1800
    assert compress_tool_output("x" * 1801) != "x" * 1801
    assert compress_tool_output("") == ""


def test_compress_tool_output_custom_sizes() -> None:
    out = compress_tool_output("0123456789" * 10, threshold_chars=50, head_chars=5, tail_chars=3)
    assert out == "01234\n\n[... 92 chars truncated ...]\n\n789"


def test_zero_tail_keeps_no_tail() -> None:
    # the reference slices content[-0:], which is the whole string
    out = compress_tool_output("y" * 3000, head_chars=10, tail_chars=0)
    assert out == "y" * 10 + "\n\n[... 2990 chars truncated ...]\n\n"


def test_never_longer_than_the_input() -> None:
    text = "z" * 1000
    # head + tail cover the whole text: the reference would report a negative omission
    assert compress_tool_output(text, threshold_chars=100) == text
    assert compress_tool_output(text, threshold_chars=100, head_chars=490, tail_chars=490) == text


@given(
    st.text(max_size=400),
    st.integers(0, 300),
    st.integers(0, 200),
    st.integers(0, 200),
)
def test_compress_tool_output_properties(text: str, threshold: int, head: int, tail: int) -> None:
    out = compress_tool_output(text, threshold_chars=threshold, head_chars=head, tail_chars=tail)
    assert len(out) <= len(text)
    if out != text:
        assert out.startswith(text[:head]) and out.endswith(text[len(text) - tail :])
        assert len(text) > threshold


# -- TokenSavingStats -------------------------------------------------------------------------


def test_stats_fields_default_to_zero() -> None:
    stats = TokenSavingStats()
    assert stats.as_dict() == {
        "compressions": 0,
        "chars_saved": 0,
        "tokens_saved": 0,
        "early_exits": 0,
        "perplexity_compressions": 0,
        "perplexity_chars_saved": 0,
        "perplexity_tokens_saved": 0,
        "perplexity_cache_hits": 0,
    }
    assert stats == TokenSavingStats()


# -- digests and text parts -------------------------------------------------------------------


def test_content_digest_is_stable_and_handles_surrogates() -> None:
    assert content_digest("abc") == content_digest("abc") != content_digest("abd")
    assert content_digest("bad \ud800 text")  # a lone surrogate must not raise
    blocks = ({"type": "text", "text": "a"},)
    assert content_digest(blocks) == content_digest([{"text": "a", "type": "text"}])


def test_text_parts_only_for_text() -> None:
    assert text_parts("x") == ["x"]
    assert text_parts(({"type": "text", "text": "a"}, {"type": "text", "text": "b"})) == ["a", "b"]
    assert text_parts(({"type": "image_url", "image_url": {"url": "data:"}},)) is None


# -- policy -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("compress_threshold_chars", -1),
        ("head_keep_chars", 1.5),
        ("keep_recent_tool_messages", True),
        ("perplexity_window_words", 0),
        ("payback_calls", 0),
        ("perplexity_keep_ratio_mid", 0),
        ("perplexity_keep_ratio_old", 1.5),
        ("perplexity_mid_cutoff", 2),  # below the recent cutoff (3)
        ("classifier", "not callable"),
    ],
)
def test_policy_rejects_bad_settings(setting: str, value: object) -> None:
    with pytest.raises(ValueError, match=setting.replace("classifier", "perplexity_classifier")):
        CompressionSettings(**{setting: value})  # type: ignore[arg-type]


def test_stage_default_mode_follows_each_lever_window() -> None:
    policy = CompressionSettings(classifier=make_heuristic_classifier(), compress_once=False)
    assert policy.stage("tool", tools_after=1, calls_ago=1) is None
    assert policy.stage("tool", tools_after=2, calls_ago=1) == Stage(True, None)
    assert policy.stage("tool", tools_after=2, calls_ago=3) == Stage(True, 0.55)
    assert policy.stage("tool", tools_after=9, calls_ago=10) == Stage(True, 0.3)
    assert policy.stage("assistant", tools_after=9, calls_ago=2) is None
    assert policy.stage("assistant", tools_after=9, calls_ago=4) == Stage(False, 0.55)


def test_stage_compress_once_waits_for_every_window() -> None:
    policy = CompressionSettings(classifier=make_heuristic_classifier(), compress_once=True)
    assert policy.stage("tool", tools_after=5, calls_ago=2) is None  # words window still open
    assert policy.stage("tool", tools_after=1, calls_ago=5) is None  # head+tail window open
    assert policy.stage("tool", tools_after=2, calls_ago=3) == Stage(True, 0.55)


# -- planner ----------------------------------------------------------------------------------


def _history(outputs: list[str]) -> list[Message]:
    """One assistant call and one tool result per output, with ids."""
    view = [Message("user", "fix the bug", id="u")]
    for i, output in enumerate(outputs):
        call = ToolCall(id=f"c{i}", name="run", args={"cmd": f"step {i}"})
        view.append(Message("assistant", f"step {i}", id=f"a{i}", tool_calls=(call,)))
        view.append(Message("tool", output, id=f"t{i}", tool_call_id=f"c{i}", name="run"))
    return view


def test_plan_compresses_old_long_tool_outputs_once() -> None:
    outputs = ["L" * 5000, "short", "M" * 4000, "N" * 3000, "O" * 3000]
    view = _history(outputs)
    plan = plan_compressions(view, {}, CompressionSettings(compress_once=False), COUNTER)
    assert sorted(plan.updates) == ["t0", "t2"]  # t3, t4 are the two most recent
    assert plan.updates["t0"]["content"] == compress_tool_output("L" * 5000)
    assert plan.stats["compressions"] == 2
    assert plan.stats["chars_saved"] == sum(
        len(o) - len(compress_tool_output(o)) for o in (outputs[0], outputs[2])
    )
    again = plan_compressions(view, plan.updates, CompressionSettings(compress_once=False), COUNTER)
    assert again.updates == {} and not any(again.stats.values())


def test_plan_drops_an_entry_whose_message_changed() -> None:
    view = _history(["L" * 5000, "a", "b"])
    first = plan_compressions(view, {}, CompressionSettings(compress_once=False), COUNTER).updates
    edited = [m if m.id != "t0" else Message("tool", "P" * 6000, id="t0") for m in view]
    plan = plan_compressions(edited, first, CompressionSettings(compress_once=False), COUNTER)
    assert plan.updates["t0"]["content"] == compress_tool_output("P" * 6000)


def test_tiered_mode_recompresses_from_the_original() -> None:
    prose = " ".join(["the agent looked at the output and then it decided"] * 20)
    policy = CompressionSettings(classifier=make_heuristic_classifier(), compress_once=False)
    mid = plan_compressions(_history([prose] + ["ok"] * 4), {}, policy, COUNTER).updates
    assert mid["t0"]["stage"] == "ht:0.55"  # 4 calls old
    old = plan_compressions(_history([prose] + ["ok"] * 11), mid, policy, COUNTER).updates
    assert old["t0"]["stage"] == "ht:0.3"  # 11 calls old
    old_words = len(str(old["t0"]["content"]).split())
    mid_words = len(str(mid["t0"]["content"]).split())
    assert old_words < mid_words < len(prose.split())


def test_compress_once_writes_a_compression_when_it_pays_or_never() -> None:
    policy = CompressionSettings(compress_once=True)
    small_gain = ["Q" * 1900, "R" * 30000, "S" * 30000]  # t0 saves little, the rest is sent
    plan = plan_compressions(_history(small_gain), {}, policy, COUNTER)
    # re-billing t1, t2 would cost more, now and later (more only comes after t0): t0 stays whole
    dropped = plan.updates["t0"]
    assert dropped["applied"] is True and dropped["content"] is None
    assert plan.stats["compressions"] == 0 and plan.settled >= 3
    big_gain = ["Q" * 40000, "R" * 300, "S" * 300]
    plan = plan_compressions(_history(big_gain), {}, policy, COUNTER)
    assert plan.updates["t0"]["applied"] is True
    assert plan.stats["compressions"] == 1


def test_compress_once_rewrites_unsent_messages_for_free() -> None:
    policy = CompressionSettings(compress_once=True, keep_recent_tool_messages=0)
    view = _history(["R" * 30000, "S" * 1900])
    plan = plan_compressions(view, {}, policy, COUNTER)
    # t1 is new in this call (after the last assistant turn): compressing it breaks nothing
    assert plan.updates["t1"]["applied"] is True


def test_plan_skips_non_text_content_and_a_failing_counter() -> None:
    image = ({"type": "image_url", "image_url": {"url": "data:" + "A" * 5000}},)
    view = _history(["L" * 5000, "a", "b"])
    view[2] = Message("tool", image, id="t0", tool_call_id="c0")
    assert (
        plan_compressions(view, {}, CompressionSettings(compress_once=False), COUNTER).updates == {}
    )

    class Broken:
        def count(self, text: str) -> int:
            raise RuntimeError("boom")

    view = _history(["L" * 5000, "M" * 5000, "b", "c"])
    assert (
        plan_compressions(view, {}, CompressionSettings(compress_once=False), Broken()).updates
        == {}
    )
