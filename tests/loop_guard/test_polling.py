"""Polls of a process still running: what reports running, what polls, and that polls are left
out of the stuck patterns (real Codex Desktop outputs, Claude Code and Codex CLI ones)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.data import TRAJECTORIES, skip_unless_here
from tests.loop_guard.test_detect import A, B, pattern, steps
from tests.loop_guard.test_steps import step
from tokenlean import LoopDetector
from tokenlean.loop_guard._keys import canonical_action
from tokenlean.loop_guard._polling import HEAD_CHARS, POLL_LOOKBACK, Report, polls, running_report
from tokenlean.loop_guard._step import Step
from tokenlean.loop_guard._steps import StepScan, build_steps
from tokenlean.replay._formats import load_trajectory

#: A Codex Desktop 0.144 run whose ``wait`` polls a cell four times in a row, from the shared
#: data (the loop guard ended it at the fourth).
CODEX_DESKTOP = TRAJECTORIES / "codex_desktop_0144" / "codex_hk_019f5cfd-b70b_ep2.json"


def report(observation: str, args: dict[str, Any] | None = None) -> Report | None:
    return running_report(step("tool", args or {}, observation), canonical_action)


def cell(cell_id: int, *, running: bool = True, seconds: str = "1.0") -> Step:
    """Codex Desktop's ``wait`` on a yielded cell (its output, as recorded)."""
    head = f"Script running with cell ID {cell_id}" if running else "Script completed"
    args = {"cell_id": str(cell_id), "yield_time_ms": 1000, "max_tokens": 12000}
    return step("wait", args, f"{head}\nWall time {seconds} seconds\nOutput:\n")


def launch(cell_id: int) -> Step:
    """The ``exec`` whose script yields a cell still running."""
    observation = f"Script running with cell ID {cell_id}\nWall time 10.0 seconds\nOutput:\n"
    return step("exec", {"input": "await tools.exec_command({cmd: 'cargo build'})"}, observation)


def bash_output(shell: str, status: str = "running", stdout: str = "") -> Step:
    """Claude Code's ``BashOutput`` on a background shell."""
    observation = (
        f"<status>{status}</status>\n\n<stdout>\n{stdout}\n</stdout>\n\n"
        "<timestamp>2025-08-20T10:00:00.000Z</timestamp>"
    )
    return step("BashOutput", {"bash_id": shell}, observation)


def background(shell: str) -> Step:
    """Claude Code's ``Bash`` run in the background."""
    return step(
        "Bash",
        {"command": "npm run build", "run_in_background": True},
        f"Command running in background with ID: {shell}",
    )


def write_stdin(session: int, *, running: bool = True) -> Step:
    """Codex CLI's ``write_stdin`` with no input: it polls the session for new output."""
    status = (
        f"Process running with session ID {session}" if running else "Process exited with code 0"
    )
    observation = (
        f"Chunk ID: 4f2a1b\nWall time: 5.0021 seconds\n{status}\nOriginal token count: 0\nOutput:\n"
    )
    return step("write_stdin", {"session_id": session, "chars": ""}, observation)


# -- what reports a target running --------------------------------------------------------


@pytest.mark.parametrize(
    ("observation", "args", "expected"),
    [
        (
            "Script running with cell ID 20\nWall time 1.0 seconds\nOutput:\n",
            {"cell_id": "20", "yield_time_ms": 1000},
            Report("20", asks=True),
        ),
        (
            "Chunk ID: 4f2a1b\nWall time: 1.0012 seconds\nProcess running with session ID 7\n"
            "Original token count: 0\nOutput:\n",
            {"session_id": 7, "chars": ""},
            Report("7", asks=True),
        ),
        (
            "<retrieval_status>not_ready</retrieval_status>\n\n<task_id>a2f0c7b</task_id>\n\n"
            "<task_type>local_agent</task_type>\n\n<status>running</status>\n\n<output>\n",
            {"task_id": "a2f0c7b", "block": False},
            Report("a2f0c7b", asks=True),
        ),
        (
            "<status>running</status>\n\n<stdout>\n\n</stdout>",
            {"bash_id": "bash_1"},
            Report("bash_1", asks=True),
        ),
        ("status: running\nstarted: 10:00", {"shellId": "s9"}, Report("s9", asks=True)),
        # no id anywhere: the call itself is what runs
        ("Still running...", {"job": "build"}, Report('tool{"job": "build"}', asks=True)),
        ("The job is still running.", {}, Report("tool{}", asks=True)),
        # what starts a process reports it running without asking about it
        (
            "Script running with cell ID 20\nWall time 10.0 seconds\nOutput:\n",
            {"input": "await tools.exec_command({cmd: 'cargo build'})"},
            Report("20", asks=False),
        ),
        (
            "Command running in background with ID: bndxnvpi2. Output is being written to: x",
            {"command": "npm run build", "run_in_background": True},
            Report("bndxnvpi2", asks=False),
        ),
        (
            '{"id": 42, "status": "running", "log": "..."}',
            {"command": "curl x"},
            Report("42", asks=False),
        ),
        ("still running (pid 4242)", {}, Report("4242", asks=False)),
    ],
)
def test_a_running_status_at_the_head_names_its_target(
    observation: str, args: dict[str, Any], expected: Report
) -> None:
    assert report(observation, args) == expected


@pytest.mark.parametrize(
    "observation",
    [
        "running 3 tests\ntest a ... ok\ntest b ... ok",  # cargo test
        "   Compiling tokenlean v0.1.0\n    Finished test\n     Running unittests src/lib.rs\n",
        "============================= test session starts =====\ncollected 3 items\n\nrunning",
        "Running setup.py install for foo ... done",
        "Server running at http://localhost:3000/",
        "Script completed\nWall time 14.4 seconds\nOutput:\nstill running",  # the cell's output
        "Script completed\nWall time 5.0 seconds\nOutput:\n" + '{"status": "done"}',
        "<status>completed</status>\n\n<exit_code>0</exit_code>",
        '{"status": "in_progress", "note": "the job is running"}',
        "The build is running slowly on this machine, consider caching.",
        "x" * HEAD_CHARS + "\nProcess running with session ID 5",  # past the head
    ],
)
def test_output_that_merely_says_running_reports_nothing(observation: str) -> None:
    assert report(observation, {"session_id": 5}) is None


def test_only_the_head_of_a_huge_output_is_read() -> None:
    huge = "Script running with cell ID 3\nOutput:\n" + "running 1 test\n" * 2_000_000
    started = time.perf_counter()
    assert report(huge) == Report("3", asks=False)
    assert report("x" * 30_000_000) is None
    assert time.perf_counter() - started < 0.5


def test_real_codex_desktop_outputs() -> None:
    skip_unless_here(CODEX_DESKTOP)
    history = build_steps(load_trajectory(CODEX_DESKTOP).messages)
    reports = [running_report(s, canonical_action) for s in history]
    heads = [s["observation"].partition("\n")[0] for s in history]
    # the yielding exec and the waits on its cell report the cell; "Script completed" nothing
    assert [r and r.target for r in reports] == [
        head.removeprefix("Script running with cell ID ") if "running" in head else None
        for head in heads
    ]
    waiting = [i for i, r in enumerate(reports) if r and history[i]["action"] == "wait"]
    assert len(waiting) == 9
    assert all(reports[i] == Report(history[i]["action_input"]["cell_id"], True) for i in waiting)
    assert all(r.asks is False for i, r in enumerate(reports) if r and i not in waiting)
    assert polls(reports) == waiting  # every wait on a running cell polls; no other step


# -- what polls ---------------------------------------------------------------------------


def test_a_step_polls_when_it_asks_about_a_target_reported_in_the_steps_before() -> None:
    started, asked = Report("7", asks=False), Report("7", asks=True)
    assert polls([started, asked, None, asked, Report("8", True)]) == [1, 3]
    assert polls([started, started, started]) == []  # nothing asks about 7
    assert polls([asked, *[None] * (POLL_LOOKBACK - 1), asked]) == [POLL_LOOKBACK]
    assert polls([started, *[None] * POLL_LOOKBACK, asked]) == []  # too long ago
    assert polls([started, asked, asked], start=2) == [2]  # the steps before start only tell


# -- polls are left out of the patterns ---------------------------------------------------


def test_waiting_on_a_running_cell_is_not_a_repeat() -> None:
    assert pattern([A, launch(16), *[cell(16)] * 6, cell(16, running=False, seconds="4.2")]) is None
    assert pattern([A, launch(16), *[cell(16)] * 6]) is None
    # without the exemption, the fourth wait ends the run
    assert pattern([A, launch(16), *[cell(16)] * 3], LoopDetector(exempt_polling=False)) == "repeat"


@pytest.mark.parametrize(
    ("start", "poll"),
    [
        (background("bash_1"), bash_output("bash_1")),
        (write_stdin(7), write_stdin(7)),
        (launch(16), cell(16)),
    ],
    ids=["claude-code-bash-output", "codex-cli-write-stdin", "codex-desktop-wait"],
)
def test_polls_neither_count_nor_interrupt(start: Step, poll: Step) -> None:
    assert pattern([start, *[poll] * 8]) is None
    assert pattern([start, A, poll, A, poll, A]) == "repeat"
    assert pattern([start, A, B, poll, A, B, poll]) == "alternating"


def test_polls_of_several_processes_in_parallel_are_polls() -> None:
    started = [background(f"bash_{i}") for i in range(3)]
    rounds = [bash_output(f"bash_{i}") for i in range(3)] * 4
    assert pattern([*started, *rounds]) is None


def test_a_poll_whose_target_nothing_reported_counts_once() -> None:
    # no step before the first wait reported cell 16: that wait counts, the next ones poll
    assert pattern([A, *[cell(16)] * 6]) is None
    assert pattern([A, A, cell(16), A]) is None  # it interrupts a repeat
    assert pattern([launch(16), A, A, cell(16), A]) == "repeat"  # a poll does not


def test_a_command_started_again_and_again_is_still_a_repeat() -> None:
    # each start reports a cell running without asking about it: no start polls
    assert pattern([A, *[launch(16)] * 3]) == "repeat"
    restarts = [
        step("exec_command", {"cmd": "make serve"}, f"Process running with session ID {uuid}")
        for uuid in (
            "019a7ae6-1945-7c63-98f2-21aa00000001",
            "019a7ae6-1945-7c63-98f2-21aa00000002",
            "019a7ae6-1945-7c63-98f2-21aa00000003",
        )
    ]
    assert pattern([A, *restarts]) == "repeat"  # new sessions, the same output once canonical


def test_a_poll_after_the_process_ended_counts_again() -> None:
    done = bash_output("bash_1", status="completed", stdout="Build failed")
    assert pattern([background("bash_1"), bash_output("bash_1"), done, done, done]) == "repeat"


def test_a_report_before_the_latest_request_is_not_looked_for() -> None:
    history = steps(launch(16), *[cell(16)] * 3)
    detector = LoopDetector()
    assert detector.detect(history, since=0) is None
    found = detector.detect(history, since=1)  # the launch came before the request
    assert found is None  # the first wait counts once, the others poll
    assert [s["step_index"] for s in detector.active(history, start=1)] == [1]


def test_a_scan_of_a_real_run_of_polls_never_fires() -> None:
    skip_unless_here(CODEX_DESKTOP)
    messages = load_trajectory(CODEX_DESKTOP).messages
    detector, counting = LoopDetector(), LoopDetector(exempt_polling=False)
    scan, start, fired = StepScan(), 0, []
    for i, message in enumerate(messages):
        if message.role == "assistant":
            scan, start = scan.extend(messages[start:i]), i
            assert detector.detect(scan.steps, since=scan.since) is None, i
            fired.append(counting.detect(scan.steps, since=scan.since) is not None)
    assert any(fired)  # the waits without the rule: a repeat


def test_exempt_polling_must_be_a_flag() -> None:
    with pytest.raises(TypeError, match="exempt_polling must be True or False"):
        LoopDetector(exempt_polling="yes")  # type: ignore[arg-type]


def empty_read(session: int, *, cell: bool = True) -> Step:
    """A read of a session that printed nothing new: Codex Desktop's cell running
    ``write_stdin`` with no input (its answer only the run header), or the CLI's tool call."""
    if cell:
        script = (
            f'const r = await tools.write_stdin({{session_id:{session},chars:"",'
            "yield_time_ms:1000,max_output_tokens:12000}); text(r.output);\n"
        )
        return step("exec", {"input": script}, "Script completed\nWall time 5.0 seconds\nOutput:\n")
    return step("write_stdin", {"session_id": session, "chars": ""}, "")


@pytest.mark.parametrize("cell", [True, False], ids=["code-mode-cell", "tool-call"])
def test_reading_a_session_that_printed_nothing_is_a_poll(cell: bool) -> None:
    """A real Codex Desktop session polled a test run this way 60 times; the guard ended it."""
    assert pattern([A, *[empty_read(40005, cell=cell)] * 8, A]) is None
    assert report(empty_read(40005, cell=cell)["observation"]) is None  # its call names it
    sent = step("write_stdin", {"session_id": 7, "chars": "y\n"}, "")  # input: not a poll
    assert pattern([A, sent, sent, sent]) == "repeat"
    watch = "Script completed\nOutput:\nRefreshing run status every 10 seconds.\n* ci: pending"
    watched = step("exec", empty_read(7)["action_input"], watch)
    assert pattern([A, *[watched] * 6, A]) is None  # a watch prints the same status each time
    ended = step("exec", empty_read(7)["action_input"], "Process exited with code 1\nboom")
    assert pattern([A, ended, ended, ended]) == "repeat"  # the process ended: no longer a poll
