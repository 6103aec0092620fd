"""Cache safety of TokenSavingMiddleware on real trajectories: which calls rewrite sent bytes."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from tests.data import TRAJECTORIES, needs_shared, real_trajectory, skip_unless_here
from tokenlean.langchain import TokenSavingMiddleware
from tokenlean.langchain._adapter import to_view
from tokenlean.replay._engine import Replay, measure_replay, replay
from tokenlean.replay._formats import Trajectory, load_trajectory
from tokenlean.replay._metrics import PromptMeasurer, RunMetrics
from tokenlean.token_saving._words import make_heuristic_classifier
from tokenlean.tokens import EstimateCounter
from tokenlean.transcript import canonical

NAMES = [
    "miniswe_deepseek/chat_test__django__django-14752.json",
    "miniswe_deepseek/reasoner_dev__pvlib__pvlib-python-1707.json",
    "sweagent/demo__ctf_web__i_got_id_demo.json",
    # two user turns: the second is a new invoke on the same checkpointed thread
    "sweagent/test__gpt4__swe-bench-dev-easy_first_only__default__pydicom__pydicom-1458.json",
]
MEASURER = PromptMeasurer(EstimateCounter())


@pytest.fixture(scope="module", params=NAMES, ids=lambda n: n.split("/")[1][:40])
def trajectory(request: pytest.FixtureRequest) -> Trajectory:
    path = real_trajectory(request.param)
    skip_unless_here(path)
    return load_trajectory(path)


def run(trajectory: Trajectory, middleware: list[Any], name: str) -> tuple[Replay, RunMetrics]:
    result = replay(trajectory, middleware)
    return result, measure_replay(trajectory, result, MEASURER, strategy=name)


def words(**settings: Any) -> TokenSavingMiddleware:
    settings.setdefault("compress_once", False)
    return TokenSavingMiddleware(
        enable_perplexity_compression=True,
        perplexity_classifier=make_heuristic_classifier(),
        **settings,
    )


def versions(result: Replay) -> dict[str, set[str]]:
    """Every distinct form in which each message was sent, by message id."""
    seen: dict[str, set[str]] = defaultdict(set)
    for call in result.calls:
        for message in call.messages:
            seen[str(message.id)].add(canonical(to_view([message])[0]))
    return seen


def expected_default_breaks(baseline: Replay) -> list[tuple[int, int]]:
    """The reference rule applied to the unedited prompts: a tool result over 1800 characters
    is rewritten in the first call where two newer tool results follow it; that call breaks
    the cache at the first such result it had already been sent."""
    breaks: list[tuple[int, int]] = []
    compressed: set[str] = set()
    previous: set[str] = set()
    for index, call in enumerate(c for c in baseline.calls if c.scripted):
        tools = [(i, m) for i, m in enumerate(call.messages) if isinstance(m, ToolMessage)]
        now = {
            str(m.id): i
            for rank, (i, m) in enumerate(tools)
            if len(tools) - rank - 1 >= 2 and isinstance(m.content, str) and len(m.content) > 1800
        }
        rewritten = [i for message_id, i in now.items() if message_id not in compressed]
        already_sent = [i for message_id, i in now.items() if message_id in previous - compressed]
        if already_sent:
            breaks.append((index, min(already_sent)))
        assert len(rewritten) == len(already_sent)  # nothing is compressed before it is sent
        compressed |= set(now)
        previous = {str(m.id) for m in call.messages}
    return breaks


def test_default_settings_break_exactly_where_outputs_leave_the_window(
    trajectory: Trajectory,
) -> None:
    baseline, _ = run(trajectory, [], "none")
    _, metrics = run(trajectory, [TokenSavingMiddleware(compress_once=False)], "token-saving")
    assert metrics.break_positions == expected_default_breaks(baseline)
    assert metrics.prefix_breaks == len(metrics.break_positions)


def test_default_settings_send_what_the_reference_package_sends(trajectory: Trajectory) -> None:
    reasonblocks = pytest.importorskip("reasonblocks")
    ours, our_metrics = run(
        trajectory, [TokenSavingMiddleware(compress_once=False)], "token-saving"
    )
    theirs, their_metrics = run(trajectory, [reasonblocks.TokenSavingMiddleware()], "reasonblocks")

    def contents(result: Replay) -> list[list[object]]:
        return [[m.content for m in call.messages] for call in result.calls]

    assert contents(ours) == contents(theirs)
    assert our_metrics.break_positions == their_metrics.break_positions


def test_tiered_word_compression_rewrites_messages_again_deep_in_the_prompt(
    trajectory: Trajectory,
) -> None:
    _, default = run(trajectory, [TokenSavingMiddleware(compress_once=False)], "token-saving")
    result, tiered = run(trajectory, [words()], "token-saving-words")
    assert tiered.prefix_breaks > default.prefix_breaks
    # original, mid tier, old tier (and head+tail first, for long tool outputs)
    assert max(len(v) for v in versions(result).values()) >= 3


def test_compress_once_rewrites_each_output_at_most_once(trajectory: Trajectory) -> None:
    result, once = run(trajectory, [words(compress_once=True)], "token-saving-once")
    forms = versions(result)
    assert max(len(v) for v in forms.values()) <= 2
    assert once.prefix_breaks <= sum(len(v) == 2 for v in forms.values())


@needs_shared
def test_compress_once_costs_less_than_the_other_settings() -> None:
    totals: dict[str, float] = defaultdict(float)
    for name in NAMES:
        trajectory = load_trajectory(TRAJECTORIES / name)
        for label, mw in (
            ("default", TokenSavingMiddleware(compress_once=False)),
            ("tiered", words()),
            ("once", words(compress_once=True)),
        ):
            totals[label] += run(trajectory, [mw], label)[1].billed_anthropic
    assert totals["once"] < totals["default"] < totals["tiered"]


def test_replay_lists_the_strategies(capsys: pytest.CaptureFixture[str]) -> None:
    from tokenlean.cli import main
    from tokenlean.replay import _strategies as strategies

    assert main(["replay", "--list"]) == 0
    listed = capsys.readouterr().out
    expected = {
        "token-saving": (False, False),
        "token-saving-words": (True, False),
        "token-saving-once": (False, True),
        "token-saving-words-once": (True, True),
    }
    for name, (uses_words, once) in expected.items():
        assert f"\n{name} " in f"\n{listed}"
        (mw,) = strategies.get(name).factory()
        assert isinstance(mw, TokenSavingMiddleware)
        assert (mw.policy.classifier is not None, mw.policy.compress_once) == (uses_words, once)
