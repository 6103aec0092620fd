from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from tokenlean.langchain._adapter import apply_edits, from_view, replace_content, to_view
from tokenlean.transcript import Edit


def _history() -> list:
    return [
        SystemMessage("sys", id="s"),
        HumanMessage("task", id="h"),
        AIMessage(
            "thinking",
            id="a1",
            tool_calls=[
                {"id": "c1", "name": "bash", "args": {"command": "ls"}, "type": "tool_call"}
            ],
            usage_metadata={"input_tokens": 10, "output_tokens": 2, "total_tokens": 12},
            response_metadata={"model_name": "m"},
            additional_kwargs={"reasoning": "r"},
        ),
        ToolMessage(
            "long output",
            id="t1",
            tool_call_id="c1",
            name="bash",
            status="error",
            artifact={"raw": [1, 2]},
            additional_kwargs={"k": "v"},
            response_metadata={"tokenlean": {}},
        ),
        ToolMessage([{"type": "image", "url": "u"}], tool_call_id="c2"),
    ]


def test_view_reads_roles_calls_and_status() -> None:
    view = to_view(_history())
    assert [m.role for m in view] == ["system", "user", "assistant", "tool", "tool"]
    assert view[2].tool_calls[0].args == {"command": "ls"}
    assert view[3].status == "error" and view[3].name == "bash" and view[3].tool_call_id == "c1"
    assert not view[4].is_text_only and view[4].id is None


def test_edits_keep_every_other_field_and_never_mutate() -> None:
    history = _history()
    snapshot = [m.model_dump() for m in history]
    edits = [
        Edit(3, "t1", "short", "test", 10, 2),
        Edit(2, "a1", "brief", "test", 5, 1),
    ]
    out = apply_edits(history, edits)
    assert [m.model_dump() for m in history] == snapshot
    tool, ai = out[3], out[2]
    assert tool.content == "short"
    before = history[3].model_dump()
    after = tool.model_dump()
    assert {k: v for k, v in after.items() if k != "content"} == {
        k: v for k, v in before.items() if k != "content"
    }
    assert ai.content == "brief"
    assert ai.usage_metadata == history[2].usage_metadata
    assert ai.response_metadata == history[2].response_metadata
    assert ai.tool_calls == history[2].tool_calls
    assert ai.additional_kwargs == {"reasoning": "r"}


def test_edit_by_index_only_for_id_less_messages() -> None:
    history = _history()
    out = apply_edits(history, [Edit(4, None, "x", "t", 1, 1), Edit(3, None, "wrong", "t", 1, 1)])
    assert out[4].content == "x"
    assert out[3].content == "long output"  # has an id, so an index-only edit is not applied


def test_edit_for_missing_id_is_ignored() -> None:
    history = _history()
    assert apply_edits(history, [Edit(0, "nope", "x", "t", 1, 1)]) == history


def test_round_trip_through_view() -> None:
    for message in _history()[:4]:
        back = from_view(to_view([message]))[0]
        assert type(back) is type(message)
        assert back.content == message.content


def test_block_content_replacement() -> None:
    out = replace_content(HumanMessage("x"), ({"type": "text", "text": "y"},))
    assert out.content == [{"type": "text", "text": "y"}]
