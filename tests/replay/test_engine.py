from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.messages import HumanMessage

from tests.data import HAVE_VOCAB, bundled_paths, needs_shared, trajectory_paths
from tokenlean.cli import main
from tokenlean.replay import _strategies as strategies
from tokenlean.replay._engine import measure_replay, replay, split_segments
from tokenlean.replay._formats import load_trajectory, parse_trajectory
from tokenlean.replay._metrics import Prompt, PromptMeasurer, measure_calls
from tokenlean.replay._runner import run_replay
from tokenlean.tokens import (
    EstimateCounter,
    VocabularyNotFoundError,
    find_vocabulary,
    message_tokens,
    tool_schema_text,
)
from tokenlean.transcript import Message

LONG = "miniswe_deepseek/chat_test__django__django-11001.json"


def _trajectory(name: str = LONG) -> Any:
    """A real trajectory: one shipped with the package, else one from the shared data."""
    paths = [*bundled_paths(), *trajectory_paths()]
    return next(load_trajectory(p) for p in paths if str(p).endswith(name))


@pytest.fixture(scope="module")
def measurer() -> PromptMeasurer:
    """Exact counts when the vocabulary is here; these tests only compare runs with each other,
    so without it the estimate measures them as well."""
    from tokenlean.tokens import TiktokenCounter

    return PromptMeasurer(TiktokenCounter("o200k_base") if HAVE_VOCAB else EstimateCounter())


@needs_shared
def test_no_middleware_on_every_real_trajectory_keeps_everything() -> None:
    trajectories = [load_trajectory(p) for p in trajectory_paths()]
    report = run_replay(trajectories, ["none"], jobs=2)
    assert not report.errors()
    for run in report.runs:
        assert run.prefix_breaks == 0, run.trajectory
        assert run.recall == 1.0, run.trajectory
        assert run.calls == sum(
            1 for m in _by_id(trajectories, run.trajectory) if m.role == "assistant"
        )
    pooled = report.pooled["none"]
    assert pooled.refs_total > 1000  # the metric measures something real


def _by_id(trajectories: list[Any], trajectory_id: str) -> tuple[Message, ...]:
    return next(t.messages for t in trajectories if t.id == trajectory_id)


class RewriteOnce(AgentMiddleware):
    """From call ``start`` on, sends message ``index`` with different text (request-only)."""

    def __init__(self, start: int, index: int) -> None:
        self.start, self.index, self.seen = start, index, 0

    def wrap_model_call(self, request: ModelRequest, handler: Any) -> Any:
        self.seen += 1
        if self.seen > self.start:
            messages = list(request.messages)
            messages[self.index] = messages[self.index].model_copy(update={"content": "[edited]"})
            request = request.override(messages=messages)
        return handler(request)


def test_one_rewrite_of_a_sent_message_is_exactly_one_break(measurer: PromptMeasurer) -> None:
    trajectory = _trajectory()
    result = replay(trajectory, [RewriteOnce(start=10, index=3)])
    run = measure_replay(trajectory, result, measurer, strategy="rewrite")
    # request.messages excludes the system prompt, so index 3 is prompt message 4
    assert run.prefix_breaks == 1
    assert run.break_positions == [(10, 4)]
    baseline = measure_replay(trajectory, replay(trajectory), measurer, strategy="none")
    assert run.calls == baseline.calls
    assert run.tokens_sent < baseline.tokens_sent


def test_billed_input_matches_hand_computation() -> None:
    first = Prompt(("tools", "sys", "u"), (600, 300, 200), frozenset())
    second = Prompt(("tools", "sys", "u", "a", "t"), (600, 300, 200, 50, 250), frozenset({"x"}))
    third = Prompt(("tools", "sys", "CHANGED", "a", "t"), (600, 300, 10, 50, 250), frozenset())
    calls = measure_calls([first, second, third], [frozenset(), frozenset({"x", "y"}), frozenset()])
    assert [c.prompt_tokens for c in calls] == [1100, 1400, 1210]
    assert [c.cached_tokens for c in calls] == [0, 1100, 900]
    assert calls[0].billed_anthropic == pytest.approx(1.25 * 1100)
    assert calls[1].billed_anthropic == pytest.approx(0.1 * 1100 + 1.25 * 300)
    assert calls[2].billed_anthropic == pytest.approx(0.1 * 900 + 1.25 * 310)
    assert calls[1].billed_openai == pytest.approx(0.1 * 1024 + 1.0 * (1400 - 1024))  # 1100 -> 1024
    assert calls[2].billed_openai == pytest.approx(1.0 * 1210)  # 900 cached: under the minimum
    assert [c.break_at for c in calls] == [None, None, 1]  # message 1 (after tools, sys is 0)
    assert (calls[1].refs_total, calls[1].refs_retained) == (2, 1)


def test_replayed_prompt_tokens_match_a_hand_count() -> None:
    data = [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Fix tests/test_app.py"},
        {
            "role": "assistant",
            "content": "look",
            "tool_calls": [{"id": "c1", "name": "bash", "args": {"command": "ls"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "app_module.py\ntests/test_app.py"},
        {"role": "assistant", "content": "open app_module.py"},
    ]
    trajectory = parse_trajectory(data, default_id="tiny")
    counter = EstimateCounter()
    result = replay(trajectory)
    run = measure_replay(trajectory, result, PromptMeasurer(counter), strategy="none")
    schema = tool_schema_text(result.calls[0].tools)
    messages = trajectory.messages
    first = counter.count(schema) + sum(message_tokens(m, counter) for m in messages[:2])
    second = first + sum(message_tokens(m, counter) for m in messages[2:4])
    assert run.calls == 2 and run.tokens_sent == first + second
    assert run.billed_anthropic == pytest.approx(
        1.25 * first + 0.1 * first + 1.25 * (second - first)
    )
    assert (run.refs_total, run.refs_retained) == (2, 2)  # app_module.py and app_module


def test_each_user_turn_is_a_new_invoke_on_the_same_thread() -> None:
    data = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "one"},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "t", "args": {}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
        {"role": "assistant", "content": "two"},
    ]
    trajectory = parse_trajectory(data, default_id="turns")
    _, segments = split_segments(trajectory.messages)
    assert [len(s.turns) for s in segments] == [1, 2]
    result = replay(trajectory)
    texts = [[m.content for m in c.messages] for c in result.calls]
    assert texts[0] == ["first"]
    assert texts[1] == ["first", "one", "second"]  # the checkpointed thread carried turn one
    assert texts[2][-1] == "out"
    assert [m.content for m in result.final_messages][-1] == "two"


def test_trailing_tool_call_gets_an_unscored_extra_call(measurer: PromptMeasurer) -> None:
    trajectory = _trajectory()
    assert trajectory.messages[-1].role != "assistant" or trajectory.messages[-1].tool_calls
    result = replay(trajectory)
    run = measure_replay(trajectory, result, measurer, strategy="none")
    assert run.extra_calls == 1
    assert run.calls == len(result.calls) - 1


class Slow(AgentMiddleware):
    def before_model(self, state: Any, runtime: Any) -> None:
        time.sleep(0.002)


class EndsEarly(AgentMiddleware):
    def wrap_model_call(self, request: ModelRequest, handler: Any) -> Any:
        response = handler(request)
        if len(request.messages) > 6:
            message = response.result[0].model_copy(update={"tool_calls": []})
            return type(response)(result=[message], structured_response=None)
        return response


def test_middleware_time_is_measured_through_the_proxy(measurer: PromptMeasurer) -> None:
    trajectory = _trajectory("sweagent/demo__ctf_web__i_got_id_demo.json")
    result = replay(trajectory, [Slow()])
    run = measure_replay(trajectory, result, measurer, strategy="slow")
    assert run.middleware_seconds >= 0.002 * run.calls
    assert replay(trajectory).middleware_seconds == 0.0


def test_a_run_ended_early_scores_only_the_calls_made(measurer: PromptMeasurer) -> None:
    trajectory = _trajectory()
    result = replay(trajectory, [EndsEarly()])
    run = measure_replay(trajectory, result, measurer, strategy="early")
    assert run.calls == 4 and run.prefix_breaks == 0 and run.recall == 1.0  # 7 messages at call 4


def test_a_broken_strategy_becomes_a_row_not_a_crash() -> None:
    class Broken(AgentMiddleware):
        def before_model(self, state: Any, runtime: Any) -> None:
            raise RuntimeError("boom")

    strategies.register("broken-for-test", lambda: [Broken()], default=False)
    report = run_replay(
        [_trajectory("sweagent/demo__ctf_web__i_got_id_demo.json")],
        ["none", "broken-for-test"],
        jobs=1,
    )
    assert [r.error is None for r in report.runs] == [True, False]
    assert "boom" in (report.runs[1].error or "")


def _vocabulary() -> bool:
    """Whether an exact vocabulary is local (the shared one, or tiktoken's own cache)."""
    try:
        find_vocabulary("o200k_base")
    except VocabularyNotFoundError:
        return False
    return True


def test_cli_replays_bundled_samples_and_writes_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json, chart = tmp_path / "r.json", tmp_path / "c.svg"
    code = main(["replay", "-s", "none", "-j", "1", "--json", str(out_json), "--chart", str(chart)])
    assert code == 0
    printed = capsys.readouterr().out
    counted = "exact o200k_base" if _vocabulary() else "estimate (no local tiktoken vocabulary)"
    assert "billed (Anthropic)" in printed and counted in printed
    data = json.loads(out_json.read_text())
    assert data["pooled"][0]["strategy"] == "none" and data["pooled"][0]["recall"] == 1.0
    assert len(data["runs"]) == 5
    assert chart.read_text().startswith("<svg")
    html = tmp_path / "c.html"
    assert main(["replay", "-s", "none", "-j", "1", "--chart", str(html), "--markdown"]) == 0
    assert "<svg" in html.read_text()
    assert "| strategy |" in capsys.readouterr().out


def test_cli_errors_are_clear(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "-s", "no-such-strategy"]) == 2
    assert "unknown strategy" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["replay", str(bad)]) == 2
    assert "bad.json: line 1" in capsys.readouterr().err
    assert main(["replay", "--list"]) == 0
    assert "none" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--json", "/no/such/folder/r.json"], "--json /no/such/folder/r.json: no folder"),
        (["--chart", "/no/such/folder/c.svg"], "--chart /no/such/folder/c.svg: no folder"),
        (["--chart", "{tmp}/chart.pdf"], "the chart is written as .svg, .png, .html"),
        (["--json", "{tmp}"], "cannot write there"),
        (["--plugin", "no_such_module_here"], "--plugin no_such_module_here: ModuleNotFoundError"),
    ],
)
def test_bad_options_are_refused_before_the_replay_runs(
    args: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert main(["replay", "-s", "none", "-j", "1", *args]) == 2
    out, err = capsys.readouterr()
    assert said in err and err.count("\n") == 1 and "Traceback" not in err
    assert "trajectories x" not in out  # refused before anything was replayed


@pytest.mark.parametrize("jobs", ["0", "-3", "two"])
def test_jobs_must_be_a_whole_number_of_at_least_one(
    jobs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["replay", "-s", "none", "-j", jobs])
    assert exit_.value.code == 2 and "-j/--jobs" in capsys.readouterr().err


def test_scripted_model_records_what_it_was_sent() -> None:
    from langchain_core.messages import AIMessage

    from tokenlean.testing import scripted_agent

    agent, model = scripted_agent([AIMessage("hello", id="r1")], system_prompt="sys")
    agent.invoke({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": "x"}})
    assert [m.content for m in model.calls[0].messages] == ["sys", "hi"]
    assert model.calls[0].scripted and model.calls[0].response.id == "r1"
