"""Messages tokenlean adds are told apart from the user's, across middleware."""

from __future__ import annotations

from tokenlean.langchain.budget import NOTICE_ID_PREFIX
from tokenlean.langchain.loop_guard import ID_PREFIX
from tokenlean.loop_guard._steps import StepScan
from tokenlean.transcript import Message, ToolCall, is_injected


def _task_start(view: list[Message]) -> int:
    return StepScan().extend(view).since


def _step(n: int) -> list[Message]:
    call = ToolCall(f"c{n}", "bash", {"command": "ls"})
    return [
        Message(role="assistant", tool_calls=(call,)),
        Message(role="tool", content="a.py", tool_call_id=f"c{n}"),
    ]


def test_every_notice_prefix_is_marked_injected() -> None:
    for prefix in (NOTICE_ID_PREFIX, ID_PREFIX, "tokenlean-early-exit-"):
        assert is_injected(prefix + "1")
    assert not is_injected("run-123") and not is_injected(None)


def test_a_notice_from_another_middleware_does_not_restart_loop_evidence() -> None:
    view = [Message(role="user", content="fix the bug"), *_step(1), *_step(2)]
    hint = Message(role="user", content="Budget spent: answer now.", id=NOTICE_ID_PREFIX + "hint-1")
    nudge = Message(role="user", content="You look stuck.", id="tokenlean-early-exit-9")
    assert _task_start([*view, hint, *_step(3)]) == 0
    assert _task_start([*view, nudge, *_step(3)]) == 0
    fresh = Message(role="user", content="now do something else", id="u2")
    assert _task_start([*view, fresh, *_step(3)]) == 2  # a real new request does restart it
