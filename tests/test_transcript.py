from __future__ import annotations

import pytest

from tokenlean.transcript import Edit, Message, ToolCall, canonical, content_text


def test_text_flattens_blocks_and_ignores_non_text() -> None:
    blocks = (
        {"type": "text", "text": "a"},
        {"type": "image", "url": "x"},
        {"type": "text", "text": "b"},
    )
    message = Message(role="tool", content=blocks, tool_call_id="c1")
    assert message.text == "a\nb"
    assert not message.is_text_only
    assert Message(role="user", content="hi").is_text_only


def test_content_text_of_odd_values() -> None:
    assert content_text(None) == ""
    assert content_text(["x", {"text": "y"}, 3]) == "x\ny"


def test_unknown_role_is_rejected() -> None:
    with pytest.raises(ValueError, match="role must be one of"):
        Message(role="robot")  # type: ignore[arg-type]


def test_canonical_is_id_free_and_stable() -> None:
    call = ToolCall(id="c1", name="bash", args={"b": 1, "a": [1, 2]})
    one = Message(role="assistant", content="x", id="m1", tool_calls=(call,))
    two = Message(role="assistant", content="x", id="other", tool_calls=(call,))
    assert canonical(one) == canonical(two)
    assert canonical(one) != canonical(Message(role="assistant", content="x "))


def test_edit_reports_saving() -> None:
    edit = Edit(
        index=0, message_id="m", new_content="x", reason="r", tokens_before=10, tokens_after=3
    )
    assert edit.tokens_saved == 7
