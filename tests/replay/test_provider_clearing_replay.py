"""Anthropic's server-side clearing replayed on real bundled runs, through the real replay.

The client's calls come from a real ``create_agent`` replay; the server's edit is applied to each
prompt; the metrics are the replay's own, against the same ``none``.
"""

from __future__ import annotations

from itertools import pairwise

from tests.data import BUNDLED
from tokenlean.provider_clearing import PLACEHOLDER, ClearToolUses
from tokenlean.replay import load_trajectory, run_replay
from tokenlean.replay._engine import measure_replay, replay
from tokenlean.replay._metrics import PromptMeasurer
from tokenlean.replay._raw import CallPrompt, measure_prompts
from tokenlean.replay.builtin.provider_clearing import (
    plain_calls,
    recommended_calls,
    server_cleared,
)
from tokenlean.tokens import EstimateCounter
from tokenlean.transcript import canonical

#: A bundled real run (mini-swe-agent, 51 tool results) that ends near 25k estimated tokens.
RUN = BUNDLED / "miniswe_deepseek" / "chat_test__django__django-11001.json"
LOW = ClearToolUses(trigger=8_000)  # passed about a third of the way through RUN


def cleared_counts(prompts: list[CallPrompt]) -> list[int]:
    return [sum(m.text == PLACEHOLDER for m in p.messages) for p in prompts if p.turn is not None]


def test_defaults_never_fire_below_100k_and_measure_as_none() -> None:
    report = run_replay(
        [load_trajectory(RUN)],
        ["none", "anthropic-clear-tool-uses", "anthropic-clear-tool-uses-30k"],
        jobs=1,
    )
    none = report.pooled["none"]
    for name in ("anthropic-clear-tool-uses", "anthropic-clear-tool-uses-30k"):
        row = report.pooled[name]
        assert not row.error and row.calls == none.calls
        assert (row.tokens_sent, row.billed_anthropic) == (
            none.tokens_sent,
            none.billed_anthropic,
        )


def test_past_the_trigger_every_call_clears_down_to_keep_and_breaks_the_cache() -> None:
    trajectory = load_trajectory(RUN)
    measurer = PromptMeasurer(EstimateCounter())
    prompts = list(server_cleared(LOW, plain_calls)(trajectory))
    cleared = measure_prompts(trajectory, prompts, measurer, strategy="server", api=None)
    none = measure_replay(trajectory, replay(trajectory), measurer, strategy="none")

    counts = cleared_counts(prompts)
    first = next(i for i, n in enumerate(counts) if n)
    assert 0 < first < len(counts) - 10
    # stateless: once past the trigger (the client keeps sending everything) every later call
    # clears all but the newest 3 results, so the count never drops
    assert counts[first:] == sorted(counts[first:]) and counts[-1] == 51 - 3
    assert cleared.calls == none.calls
    assert cleared.tokens_sent < none.tokens_sent
    assert cleared.refs_retained <= none.refs_retained
    # a break on each call that pushed one more result out of the kept three (none breaks never)
    grew = sum(1 for a, b in pairwise(counts) if b > a)
    assert none.prefix_breaks == 0 and cleared.prefix_breaks == grew > 10


def test_each_result_is_sent_in_two_forms_at_most_and_never_back() -> None:
    prompts = server_cleared(LOW, plain_calls)(load_trajectory(RUN))
    forms: dict[str, list[str]] = {}
    for prompt in prompts:
        for message in prompt.messages:
            seen = forms.setdefault(message.id or canonical(message), [])
            if not seen or seen[-1] != canonical(message):
                seen.append(canonical(message))
    assert max(len(f) for f in forms.values()) == 2
    assert all(f[-1].count(PLACEHOLDER) for f in forms.values() if len(f) == 2)


def test_on_top_of_recommended_it_clears_what_tokenlean_sends() -> None:
    trajectory = load_trajectory(RUN)
    measurer = PromptMeasurer(EstimateCounter())
    alone = list(recommended_calls(trajectory))
    both = list(server_cleared(LOW, recommended_calls)(trajectory))
    assert [p.turn for p in both] == [p.turn for p in alone]
    assert [p.tools for p in both] == [p.tools for p in alone]  # tools are never edited
    first = measure_prompts(trajectory, alone, measurer, strategy="rec", api=None)
    second = measure_prompts(trajectory, both, measurer, strategy="rec+server", api=None)
    assert sum(cleared_counts(both)) > 0
    assert second.tokens_sent < first.tokens_sent
