"""Canonical forms of actions and observations, and failure detection."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenlean.loop_guard._canonical import canonical_text
from tokenlean.loop_guard._detect import LoopDetector
from tokenlean.loop_guard._keys import StepKeys, canonical_action, is_failure, step_key
from tokenlean.loop_guard._step import Step
from tokenlean.loop_guard._steps import StepList, StepScan
from tokenlean.transcript import Message, ToolCall


def step(
    action: str = "bash",
    args: dict[str, Any] | None = None,
    observation: str = "",
    *,
    thought: str = "",
    is_error: bool = False,
    index: int = 0,
) -> Step:
    return Step(
        step_index=index,
        action=action,
        action_input=args if args is not None else {"command": "ls"},
        thought=thought,
        observation=observation,
        is_error=is_error,
    )


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("a  b\n\n\tc  ", "a b c"),
        ("built 2024-04-10T07:11:22.123Z", "built 2025-01-02T23:59:01Z"),
        ("built 2024-04-10 07:11:22+02:00", "built 2023-12-31 00:00:00 UTC"),
        ("-rw-r--r-- 1 root root 782 Oct 24  2024 x", "-rw-r--r-- 1 root root 782 Apr 10 07:11 x"),
        ("at 10:15:03.250 done", "at 23:01:59 done"),
        ("stamp 1712733082", "stamp 1712999999"),
        ("Ran 3 tests in 0.004s", "Ran 3 tests in 1.250s"),
        ("=== 1 passed in 0.12s ===", "=== 1 passed in 3 seconds ==="),
        ("server pid 1234 ready", "server pid 98765 ready"),
        ("Killed process 4242", "Killed process 4343"),
        ("/proc/77/status", "/proc/78/status"),
        ("[1] 4242", "[1] 9001"),
        ("<Foo object at 0x7f3a2b1c9d50>", "<Foo object at 0x10ab2c>"),
        ("HEAD is now at 3f9c2ab fix", "HEAD is now at 1e2d3c4 fix"),
        ("id 123e4567-e89b-12d3-a456-426614174000", "id 00000000-0000-4000-8000-0000000000ab"),
        ("/tmp/tmpab3x9_kq/out.txt", "/tmp/tmpzz81lm0p/out.txt"),
        ("/tmp/tmp.Ab12Cd34Ef/x", "/tmp/tmp.Zz98Yy76Xx/x"),
        ("/tmp/pytest-of-root/pytest-12/t0", "/tmp/pytest-of-ci/pytest-3/t0"),
        ("/var/folders/ab/cd12ef/T/x.log", "/private/var/folders/zz/yy99/T/x.log"),
    ],
)
def test_volatile_parts_are_normalised(first: str, second: str) -> None:
    assert canonical_text(first) == canonical_text(second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("3 passed", "4 passed"),  # counts are content, not noise
        ("line 10: x = 1", "line 11: x = 1"),
        ("/tmp/a.py", "/tmp/b.py"),  # a readable temp name is a different file
        ("/tmp/tmp_results/x", "/tmp/tmp_outputs/x"),
        ("AssertionError: 1 != 2", "AssertionError: 1 != 3"),
        ("value 12345", "value 12346"),  # decimal numbers are not hex ids
        ("def f():\n    return 1", "def f():\n    return 2"),
        ("pid file missing", "pid file present"),
    ],
)
def test_real_differences_survive(first: str, second: str) -> None:
    assert canonical_text(first) != canonical_text(second)


def test_argument_key_order_and_whitespace_do_not_change_the_action() -> None:
    a = step(args={"path": "a.py", "command": "view  a.py"})
    b = step(args={"command": "view a.py\n", "path": "a.py"})
    assert canonical_action(a) == canonical_action(b)


def test_nested_arguments_are_canonical_too() -> None:
    a = step(args={"opts": {"b": 1, "a": [" x ", {"d": 2, "c": 3}]}})
    b = step(args={"opts": {"a": ["x", {"c": 3, "d": 2}], "b": 1}})
    assert canonical_action(a) == canonical_action(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (step("bash", {"command": "ls"}), step("sh", {"command": "ls"})),
        (step(args={"command": "ls"}), step(args={"command": "ls -la"})),
        (step(args={"n": 1}), step(args={"n": "1"})),
        (step(args={"path": "a.py"}), step(args={"file": "a.py"})),
    ],
)
def test_different_actions_stay_different(a: Step, b: Step) -> None:
    assert canonical_action(a) != canonical_action(b)


def test_step_key_compares_the_observation() -> None:
    same = step(observation="ok 0.1s"), step(observation="ok  0.3s")
    changed = step(observation="1 failed"), step(observation="0 failed")
    assert step_key(same[0]) == step_key(same[1])
    assert step_key(changed[0]) != step_key(changed[1])


@pytest.mark.parametrize(
    ("observation", "is_error", "expected"),
    [
        ("<returncode>1</returncode>\n<output>boom</output>", False, True),
        ("<returncode>0</returncode>\n<output>Error: not really</output>", False, False),
        ("Traceback (most recent call last):\n  File x", False, True),
        ("ModuleNotFoundError: No module named 'x'", False, True),
        ("bash: foo: command not found", False, True),
        ("cat: x.py: No such file or directory", False, True),
        ("fatal: not a git repository", False, True),
        ("Process exited with exit code 2", False, True),
        ("all good", True, True),  # the tool said so
        ("all good", False, False),
        ("10 lines\nERROR lines further down are log content", False, False),
        ("", False, False),
    ],
)
def test_is_failure(observation: str, is_error: bool, expected: bool) -> None:
    assert is_failure(step(observation=observation, is_error=is_error)) is expected


@given(st.text())
def test_canonical_text_is_idempotent(text: str) -> None:
    once = canonical_text(text)
    assert canonical_text(once) == once


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"])), st.data())
def test_whitespace_never_matters(text: str, data: st.DataObject) -> None:
    words = text.split()
    seps = data.draw(
        st.lists(st.sampled_from([" ", "  ", "\n", "\t", " \n "]), min_size=len(words))
    )
    spaced = "".join(w + s for w, s in zip(words, seps, strict=False))
    assert canonical_text(spaced) == canonical_text(" ".join(words))


# -- incremental scans ---------------------------------------------------------------------


@given(
    st.integers(0, 8),
    st.integers(0, 8),
    st.integers(0, 4),
    st.integers(-12, 12) | st.none(),
    st.integers(-12, 12) | st.none(),
    st.sampled_from([None, 1, 2, -1]),
)
def test_a_step_list_slices_like_a_list(
    base: int, extra: int, tail: int, start: int | None, stop: int | None, stride: int | None
) -> None:
    steps = [step(index=i) for i in range(base + extra + tail)]
    shared = steps[: base + extra]  # the list is shared: appends past ``base`` are not ours
    view = StepList(shared, base, tuple(steps[base + extra :]))
    expected = steps[:base] + steps[base + extra :]
    got, want = view[start:stop:stride], expected[start:stop:stride]
    assert len(got) == len(want) and all(a is b for a, b in zip(got, want, strict=True))


def _turns(n: int) -> list[Message]:
    messages = [Message("user", "go", id="h")]
    for i in range(n):
        call = ToolCall(f"c{i}", "bash", {"command": f"ls {i % 2}"})
        messages += [
            Message("assistant", f"step {i}", id=f"a{i}", tool_calls=(call,)),
            Message("tool", f"out {i % 3}", id=f"t{i}", tool_call_id=f"c{i}", name="bash"),
            Message("user", "continue" if i % 2 else f"new task {i}", id=f"u{i}"),
        ]
    return messages


@pytest.mark.parametrize("cut", [0, 1, 2, 4, 7, 10])
def test_settling_a_read_scan_equals_extending_it(cut: int) -> None:
    messages = _turns(4)
    base = StepScan().extend(messages[:cut])
    read = base.extend(messages[cut:], settled=False)
    settled = base.settle(read)
    again = base.extend(messages[cut:])
    assert list(settled.steps) == list(again.steps)
    assert (settled.since, settled.request, settled.turns) == (
        again.since,
        again.request,
        again.turns,
    )
    new = read.steps[len(base.steps) :]
    assert all(a is b for a, b in zip(settled.steps[len(base.steps) :], new, strict=True))
    # and later scans continue it like any settled scan
    assert list(settled.extend(_turns(1)[1:]).steps) == list(again.extend(_turns(1)[1:]).steps)


@given(st.lists(st.sampled_from(["a", "b"]), max_size=6), st.lists(st.text(max_size=3)))
def test_the_halves_of_a_step_key_are_the_key(actions: list[str], outputs: list[str]) -> None:
    made = [
        step(args={"command": a}, observation=outputs[i % len(outputs)] if outputs else "")
        for i, a in enumerate(actions)
    ]
    keys = StepKeys()
    for s in made:
        assert step_key(s) == keys.key(s) == (keys.action_key(s), keys.observation_key(s))
    s = made[0] if made else step()
    keys.key(s)
    s["observation"] = "replaced  0.5s"  # a replaced observation is read again
    assert keys.observation_key(s) == canonical_text("replaced  0.5s")
    s["action_input"] = {"command": "pwd"}  # and so is a replaced input
    assert keys.action_key(s) == canonical_action(s) == step_key(s)[0]


def test_step_keys_are_remembered_per_step_by_their_owner_only() -> None:
    keys, other = StepKeys(max_keys=2), StepKeys()
    first = step(observation="ok")
    remembered = keys._of(first)
    assert keys._of(first) is remembered and not other._keys
    assert keys._of(step(observation="ok")) is not remembered  # an equal step is another step
    for i in range(3):
        keys.key(step(observation=str(i)))
    assert len(keys._keys) == 2  # the oldest forgotten first


def test_each_detector_keeps_the_keys_of_its_own_steps() -> None:
    first, second = LoopDetector(), LoopDetector()
    assert first._keys is not second._keys and first == second  # the keys are not settings
    steps = [step(observation="same", index=i) for i in range(4)]
    assert first.detect(steps) is not None
    assert len(first._keys._keys) == 4 and not second._keys._keys
    copied = copy.deepcopy(first)
    assert copied == first and not copied._keys._keys  # a copy starts with none
    assert pickle.loads(pickle.dumps(first)) == first
