"""Stuck patterns and loop signals: each pattern, its near-misses, exemptions, config."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.data import HAVE_SHARED, TRAJECTORIES, needs_shared
from tests.loop_guard.test_steps import step
from tokenlean import Detection, LoopDetector, detect_stuck, loop_signals
from tokenlean.loop_guard._keys import canonical_action
from tokenlean.loop_guard._polling import POLL_LOOKBACK, running_report
from tokenlean.loop_guard._step import Step
from tokenlean.loop_guard._steps import StepScan, build_steps
from tokenlean.replay._formats import load_trajectory
from tokenlean.transcript import INJECTED_ID_PREFIX, Message, ToolCall


def steps(*items: Step) -> list[Step]:
    return [{**s, "step_index": i} for i, s in enumerate(items)]  # type: ignore[typeddict-item]


def run(command: str, output: str = "ok", **kw: Any) -> Step:
    return step("bash", {"command": command}, output, **kw)


def edit(text: str) -> Step:
    return step("edit", {"path": "a.py", "new": text}, "File updated.")


def talk(text: str = "I think the fix is in utils.py.") -> Step:
    return step("", {}, "", thought=text)


A, B, C = run("cat a.py", "print(1)"), run("cat b.py", "print(2)"), run("ls", "a.py b.py")


def pattern(
    history: Sequence[Step], detector: LoopDetector | None = None, *, since: int | None = None
) -> str | None:
    found = (detector or LoopDetector()).detect(steps(*history), since=since)
    return found.pattern if found else None


# -- each pattern fires ---------------------------------------------------------------------


def test_same_action_same_observation_three_times_is_a_repeat() -> None:
    found = detect_stuck(steps(C, A, A, A))
    assert found == Detection("repeat", 1, 2, 1, 3, ("bash",))


def test_repeat_sees_through_volatile_output() -> None:
    history = [run("date; make", f"built at 2024-05-0{i} 10:0{i}:00 in 0.{i}s") for i in (1, 2, 3)]
    assert pattern(history) == "repeat"


def test_same_action_failing_with_changing_errors_is_failing() -> None:
    history = [run("pytest", f"<returncode>1</returncode>\nE assert {i} == 0") for i in range(3)]
    assert pattern([C, *history]) == "failing"


def test_talking_without_acting() -> None:
    history = [C, talk("Let me think."), talk("The bug is..."), talk("So...")]
    assert pattern(history, since=0) == "talking"  # since=0: no new user message in between


def test_alternating_between_two_actions_with_same_observations() -> None:
    assert pattern([C, A, B, A, B]) == "alternating"


def test_short_cycle_repeated() -> None:
    assert pattern([A, B, C, A, B, C]) == "cycle"
    d, e = run("head x", "x"), run("tail x", "y")
    assert pattern([A, B, d, e, A, B, d, e]) == "cycle"


def test_parallel_calls_repeated_as_a_turn_form_a_cycle() -> None:
    turn = [step("read", {"p": "a"}, "1"), step("read", {"p": "b"}, "2")]
    assert pattern(turn * 2) == "alternating"


def test_a_wide_turn_of_parallel_calls_repeated_is_caught() -> None:
    # One assistant turn reading six orders at once is six steps: repeated, a block of six.
    turn = [step("get_order", {"id": f"#W{i}"}, f"order {i}") for i in range(6)]
    assert pattern([C, *turn, *turn[:5]]) is None  # the copy is not complete yet
    assert pattern([C, *turn, *turn]) == "cycle"
    lookup = step("find_user", {"zip": "76171"}, "olivia")
    assert pattern([lookup, *turn[:4], lookup, *turn[:4]]) == "cycle"  # turns of 1 and 4 calls
    other = [step("get_order", {"id": f"#X{i}"}, f"order {i}") for i in range(6)]
    assert pattern([C, *turn, *other]) is None


def test_the_strongest_pattern_wins() -> None:
    found = detect_stuck(steps(A, A, A, A, A))
    assert found is not None and found.pattern == "repeat" and found.redundant == 4


# -- near-misses that must not fire ------------------------------------------------------


@pytest.mark.parametrize(
    "history",
    [
        pytest.param([A, A], id="repeat-only-twice"),
        pytest.param([A, A, B, A, A], id="repeat-interrupted"),
        pytest.param(
            [run("cat a", "1"), run("cat a", "2"), run("cat a", "3")], id="output-changes"
        ),
        pytest.param([run("cat a"), run("cat b"), run("cat c")], id="arguments-change"),
        pytest.param(
            [run("scroll_down", f"lines {i}00-{i}99") for i in range(6)], id="paging-forward"
        ),
        pytest.param(
            [
                x
                for i in range(4)
                for x in (edit(f"fix {i}"), run("pytest", f"<returncode>1</returncode> E {i}"))
            ],
            id="edit-then-rerun-with-changing-output",
        ),
        pytest.param(
            [x for i in range(4) for x in (edit(f"fix {i}"), run("pytest", "1 failed"))],
            id="edit-then-rerun-same-output-but-different-edits",
        ),
        pytest.param(
            [
                x
                for i in range(3)
                for x in (run("pytest", "<returncode>1</returncode>"), edit(f"{i}"))
            ],
            id="same-failure-between-different-edits",
        ),
        pytest.param(
            [run("pytest", "<returncode>1</returncode> E"), run("pytest -x", "E")] * 1
            + [run("pytest -k a", "<returncode>1</returncode> E")],
            id="failing-but-different-commands",
        ),
        pytest.param(
            [run("pytest", "<returncode>0</returncode> ok")] * 2
            + [run("pytest", "<returncode>1</returncode> E")],
            id="failing-once-after-passes",
        ),
        pytest.param([C, talk(), talk(), A], id="talking-then-acting"),
        pytest.param([talk("a"), talk("b"), talk("c"), talk("d")], id="chat-without-tools"),
        pytest.param([C, talk(), talk()], id="talking-twice"),
        pytest.param([A, B, A], id="alternation-not-round-twice"),
        pytest.param([A, B, A, run("cat b.py", "print(3)")], id="alternation-output-changes"),
        pytest.param([A, B, C, A, B], id="cycle-not-round-twice"),
        pytest.param([], id="empty"),
    ],
)
def test_near_misses_do_not_fire(history: list[Step]) -> None:
    assert pattern(history) is None
    assert pattern(history, since=0) is None  # nor knowing that no user message came between


# -- talking, and the user between replies ----------------------------------------------


def user(text: str, message_id: str | None = None) -> Message:
    return Message("user", text, id=message_id)


def reply(text: str) -> Message:
    return Message("assistant", text)


def act(i: int) -> list[Message]:
    call = ToolCall(f"c{i}", "sh", {"command": f"cat part{i}.txt"})
    return [
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", f"part {i}", tool_call_id=f"c{i}"),
    ]


def verdict(messages: Sequence[Message]) -> str | None:
    """What the loop guard makes of a transcript: steps, and where the latest new request is."""
    scan = StepScan().extend(messages)
    found = LoopDetector().detect(scan.steps, since=scan.since)
    return found.pattern if found else None


def test_talking_across_a_harness_repeating_the_same_prompt() -> None:
    messages = [user("Fix the bug in utils.py."), *act(0), reply("It is in parse().")]
    for text in ("I will fix it.", "The fix is simple.", "So the fix is..."):
        messages += [user("Continue. Use a tool if you need one."), reply(text)]
    assert verdict(messages[:-2]) is None  # two replies since the prompt first came
    assert verdict(messages) == "talking"


def test_talking_when_no_user_message_came_between_the_replies() -> None:
    messages = [user("Fix the bug."), *act(0), reply("Let me think."), reply("The bug is...")]
    assert verdict(messages) is None
    assert verdict([*messages, reply("So...")]) == "talking"


def test_a_message_tokenlean_injected_is_no_new_request() -> None:
    nudge = user("You seem to be repeating yourself.", f"{INJECTED_ID_PREFIX}loop-guard-nudge-3")
    messages = [user("Fix the bug."), *act(0), reply("a"), nudge, reply("b"), nudge, reply("c")]
    assert verdict(messages) == "talking"


def test_answering_a_user_turn_after_turn_is_not_talking() -> None:
    # A customer-service agent: it looked something up, then answers each new user message.
    messages = [user("Begin."), reply("Hi! How can I help?"), user("Where is my order?"), *act(0)]
    for i, question in enumerate(["Can you cancel it?", "And the charger?", "Thanks!"]):
        messages += [reply(f"Answer {i}."), user(question)]
    messages.append(reply("You are welcome."))
    assert verdict(messages) is None
    assert verdict([*messages, reply("Anything else?"), reply("Goodbye.")]) == "talking"


def test_steps_alone_never_claim_talking() -> None:
    # Between two replies without tool calls control went back to the caller; steps do not say
    # whether what came back was a new question or the same prompt again: when in doubt, keep.
    history = steps(C, talk("Let me think."), talk("The bug is..."), talk("So..."))
    assert detect_stuck(history) is None
    assert loop_signals(history)["streak"] == 0.0
    assert LoopDetector().signals(history, since=0)["streak"] == 0.75


def test_the_same_edit_and_the_same_failure_over_and_over_is_a_loop() -> None:
    assert pattern([run("pytest", "<returncode>1</returncode> E"), edit("x")] * 2) == "alternating"


def test_only_the_end_of_the_run_counts() -> None:
    assert pattern([A, A, A, B, C]) is None  # the agent got out of it


# -- exemptions and configuration --------------------------------------------------------


def test_exempt_tools_neither_count_nor_interrupt() -> None:
    poll = step("job_status", {"id": 7}, "queued")
    detector = LoopDetector(exempt_tools={"job_status"})
    assert pattern([poll] * 6, detector) is None
    assert pattern([A, poll, A, poll, A], detector) == "repeat"
    assert pattern([poll] * 6) == "repeat"  # not exempt by default


def test_exempt_if_predicate() -> None:
    def is_sleep(s: Step) -> bool:
        return str(s["action_input"].get("command", "")).startswith("sleep")

    nap = run("sleep 5", "")
    assert pattern([nap] * 4, LoopDetector(exempt_if=is_sleep)) is None
    assert pattern([nap] * 4) == "repeat"


def test_thresholds_and_enabled_patterns() -> None:
    assert pattern([A, A, A], LoopDetector(repeat_after=4)) is None
    assert pattern([A, A, A, A], LoopDetector(repeat_after=4)) == "repeat"
    assert pattern([A, B, A, B], LoopDetector(cycle_repeats=3)) is None
    assert pattern([A, B] * 3, LoopDetector(cycle_repeats=3)) == "alternating"
    assert pattern([A, B, C] * 2, LoopDetector(max_period=2)) is None
    assert pattern([A, A, A], LoopDetector(patterns=["alternating"])) is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"repeat_after": 1},
        {"failing_after": 0},
        {"talking_after": 1},
        {"cycle_repeats": 1},
        {"max_period": 0},
        {"signal_window": 1},
        {"hedge_window": 0},
        {"patterns": ["repeat", "spinning"]},
        {"exempt_tools": "bash"},
    ],
)
def test_bad_config_is_a_clear_value_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs)).split("_")[0]):
        LoopDetector(**kwargs)


def test_config_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        LoopDetector(3)  # type: ignore[misc]


# -- signals ----------------------------------------------------------------------------


def test_signals_rise_with_looping() -> None:
    healthy = loop_signals(steps(A, B, C, edit("x"), run("pytest", "ok")))
    looping = loop_signals(steps(A, B, C, A, A, A, A, A))
    assert healthy == {"streak": 0.0, "hedge": 0.0, "diversity": 0.0}
    assert looping["streak"] > 0.9 and looping["diversity"] >= 0.8
    assert loop_signals(steps(C, A, A))["streak"] == 0.5


@pytest.mark.parametrize("since", [None, 0, 1])
def test_streak_passes_the_reference_threshold_exactly_where_patterns_fire(
    since: int | None,
) -> None:
    detector = LoopDetector()
    cases = [[C, A, A], [C, A, A, A], [A, B, A], [A, B, A, B], [C, talk(), talk(), talk()]]
    cases += [[C, talk(), talk()], [C, A, talk(), talk(), talk()]]
    for history in (steps(*h) for h in cases):
        fired = detector.detect(history, since=since) is not None
        assert (detector.signals(history, since=since)["streak"] > 0.7) is fired, history


def test_streak_ignores_a_repeated_action_whose_output_changes() -> None:
    history = [run("tail log", f"line {i}") for i in range(5)]
    assert loop_signals(steps(*history))["streak"] == 0.0


def test_hedge_reads_self_doubt_in_recent_thoughts() -> None:
    doubt = [
        run("pytest", "E", thought="Still failing with the same error, let me try again."),
        run("pytest -x", "E", thought="I'm not sure why this doesn't work. Sorry."),
    ]
    calm = [run("pytest", "ok", thought="The tests pass; I will write the summary.")]
    assert loop_signals(steps(*doubt))["hedge"] == 1.0
    assert loop_signals(steps(*calm))["hedge"] == 0.0
    mixed = loop_signals(steps(*doubt, *calm, *calm))["hedge"]
    assert 0.0 < mixed < 1.0


def test_diversity_is_the_loss_of_diversity() -> None:
    assert loop_signals(steps(A, B, C, A, B, C))["diversity"] == pytest.approx(0.6)
    assert loop_signals(steps(*[A] * 6))["diversity"] == 1.0
    assert loop_signals(steps(A, A))["diversity"] == pytest.approx(0.2)  # short: stays low


@st.composite
def histories(draw: st.DrawFn) -> list[Step]:
    pool = [A, B, C, talk(), talk("again, sorry"), run("pytest", "<returncode>2</returncode>")]
    pool += [edit("x"), step("poll", {}, "wait", is_error=True)]
    # a cell started, polled while it runs, then done (see test_polling)
    pool += [step("exec", {"input": "make"}, "Script running with cell ID 3\nOutput:\n")]
    pool += [step("wait", {"cell_id": "3"}, f"Script {s}\nOutput:\n") for s in RUNNING]
    return steps(*draw(st.lists(st.sampled_from(pool), max_size=30)))


RUNNING = ("running with cell ID 3", "running with cell ID 4", "completed")


@given(histories())
def test_signals_are_always_in_unit_range(history: list[Step]) -> None:
    signals = loop_signals(history)
    assert set(signals) == {"streak", "hedge", "diversity"}
    assert all(0.0 <= v <= 1.0 for v in signals.values())


@given(histories(), st.one_of(st.none(), st.integers(0, 30)))
def test_detection_points_at_the_end_of_the_run(history: list[Step], since: int | None) -> None:
    detector = LoopDetector()
    found = detector.detect(history, since=since)
    if found is not None:  # the last step that is no poll
        assert found.last_step == detector.active(history, start=since or 0)[-1]["step_index"]
        assert (since or 0) <= found.first_step <= found.last_step  # evidence is from since on


def _latest_one_by_one(detector: LoopDetector, history: Sequence[Step], start: int) -> list[Step]:
    """What ``active`` reads, step by step from the end (how it was first written)."""
    kept: list[Step] = []
    for index in range(len(history) - 1, max(0, start) - 1, -1):
        if len(kept) == 2 * max(3, detector.max_period * detector.cycle_repeats, 6):
            break
        s = history[index]
        if s["action"] in detector.exempt_tools or (detector.exempt_if and detector.exempt_if(s)):
            continue
        if detector.exempt_polling and _polls(history, index, max(0, start)):
            continue
        kept.append(s)
    return kept[::-1]


def _polls(history: Sequence[Step], index: int, start: int) -> bool:
    """Whether ``history[index]`` polls: it asks about what it reports running, and a step
    among the ``POLL_LOOKBACK`` before it (from ``start`` on) reported that running."""
    report = running_report(history[index], canonical_action)
    earlier = [running_report(history[i], canonical_action) for i in range(start, index)]
    return (
        report is not None
        and report.asks
        and any(r and r.target == report.target for r in earlier[-POLL_LOOKBACK:])
    )


@given(
    histories(),
    st.integers(0, 35),
    st.sampled_from([frozenset(), frozenset({"poll"}), frozenset({"bash"})]),
    st.sampled_from([list, tuple, "scan"]),
    st.booleans(),
)
def test_the_latest_steps_are_read_in_slices_as_one_by_one(
    history: list[Step], start: int, exempt: frozenset[str], kind: Any, polling: bool
) -> None:
    # a short horizon: 12 steps
    detector = LoopDetector(exempt_tools=exempt, max_period=3, exempt_polling=polling)
    given_steps: Sequence[Step] = history if kind == "scan" else kind(history)
    if kind == "scan":  # a StepList: a shared base and a tail
        half = len(history) // 2
        given_steps = StepScan(steps=history[:half]).extend([]).steps
        given_steps = given_steps.then(history[half:], settled=False)  # type: ignore[attr-defined]
    expected = _latest_one_by_one(detector, history, start)
    assert detector.active(given_steps, start=start) == expected


def test_a_step_that_is_no_step_is_named_by_its_position() -> None:
    history: list[Any] = [*steps(A, B, C), "not a step", *steps(A, B)]
    with pytest.raises(TypeError, match=r"steps\[3\] must be a Step dict"):
        LoopDetector().detect(history)
    assert LoopDetector().detect(history, since=4) is None  # not read: not checked


# -- real trajectories -------------------------------------------------------------------


def _labelled(resolved: bool) -> list[Any]:
    """Runs with this outcome, every source (one skipped placeholder without the shared data)."""
    if not HAVE_SHARED:
        return [pytest.param("", marks=needs_shared)]
    rows = [json.loads(line) for line in (TRAJECTORIES / "index.jsonl").open()]
    names = [r["file"] for r in rows if r["resolved"] is resolved]
    return [pytest.param(n, id=_short(n)) for n in names]


def _short(name: str) -> str:
    return name if len(name) <= 90 else f"{name[:55]}...{name[-32:]}"


def _one_per_source(params: list[Any]) -> list[Any]:
    first: dict[str, Any] = {}
    for param in params:
        first.setdefault(Path(param.values[0]).parent.name, param)
    return list(first.values())


def _reference_rule(s: dict[str, float]) -> bool:
    return s["streak"] > 0.7 or (s["hedge"] > 0.6 and s["diversity"] > 0.5)


def _before_each_call(messages: Sequence[Message]) -> Iterator[StepScan]:
    """What the loop guard reads before each model call, scanned incrementally as it does."""
    scan, start = StepScan(), 0
    for i, message in enumerate(messages):
        if message.role == "assistant":
            scan, start = scan.extend(messages[start:i]), i
            yield scan
    yield scan.extend(messages[start:])


@needs_shared
@pytest.mark.parametrize("name", _labelled(True))
def test_never_fires_on_a_resolved_run(name: str) -> None:
    messages = load_trajectory(TRAJECTORIES / name).messages
    detector = LoopDetector()
    for call, scan in enumerate(_before_each_call(messages)):
        # The loop guard's view: steps, and where the user's latest new request is.
        assert detector.detect(scan.steps, since=scan.since) is None, call
        assert not _reference_rule(detector.signals(scan.steps, since=scan.since)), call
        # A reference signals_fn's view: the steps alone.
        assert not _reference_rule(loop_signals(list(scan.steps))), call
    assert len(scan.steps) == len(build_steps(messages))


@needs_shared
@pytest.mark.parametrize("name", _one_per_source(_labelled(True)))
def test_fires_when_a_real_step_or_pair_is_repeated(name: str) -> None:
    history = build_steps(load_trajectory(TRAJECTORIES / name).messages)
    acting = [i for i in range(len(history) - 1) if history[i]["action"]]
    middle = acting[len(acting) // 2]
    for looped in ([history[middle]] * 3, history[middle : middle + 2] * 2):
        found = detect_stuck(steps(*history[:middle], *looped))
        assert found is not None and found.pattern in ("repeat", "alternating"), name
