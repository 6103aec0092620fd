"""What the AgentScope adapter never does, whatever the context: property tests.

Any context of blocks the adapter may meet (text, thinking with signatures, data, hints, tool
calls with odd inputs, results with data or huge or odd text, orphan results, parallel calls)
goes through shortening with every block in its place: the same messages, the same blocks in
the same order with the same ids, only a tool result's text or a call's input rewritten (the
input still a JSON object), and a second pass changes nothing (what was sent stays as sent).
"""

from __future__ import annotations

import json
from typing import Any

from agentscope.message import (
    Base64Source,
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.data import LOG, SCRIPT
from tokenlean.agentscope import ContextEditorMiddleware, ToolOutputShorteningMiddleware
from tokenlean.context_editor import ContextEditorSettings

_TEXT = st.one_of(
    st.text(max_size=40),
    st.just(LOG),
    st.just(SCRIPT),
    st.just(json.dumps({"a": [{"b": [[[{"c": 1}]]]}]} | {str(i): i for i in range(300)})),
    st.just("\ud800 lone surrogate \udfff" * 50),
)
_IDS = st.sampled_from(["c1", "c2", "c3", "orphan", ""])
_INPUT = st.one_of(
    st.builds(lambda t: json.dumps({"cmd": t}), _TEXT),
    st.sampled_from(["", "not json", "[1, 2]", '{"cmd": ']),
)
_PNG = Base64Source(data="iVBORw0KGgo=", media_type="image/png")


def _block(kind: str, text: str, call_id: str, raw: str) -> Any:
    if kind == "text":
        return TextBlock(text=text)
    if kind == "thinking":
        return ThinkingBlock(thinking=text, signature="sig-" + call_id)
    if kind == "data":
        return DataBlock(source=_PNG)
    if kind == "hint":
        return HintBlock(hint=text or "hint")
    if kind == "call":
        return ToolCallBlock(id=call_id, name="bash", input=raw)
    if kind == "data_result":
        return ToolResultBlock(id=call_id, name="shot", output=[DataBlock(source=_PNG)])
    return ToolResultBlock(id=call_id, name="bash", output=text, state="success")


_BLOCKS = st.builds(
    _block,
    st.sampled_from(["text", "thinking", "data", "hint", "call", "result", "data_result"]),
    _TEXT,
    _IDS,
    _INPUT,
)
_MSG = st.one_of(
    st.builds(
        lambda bs: Msg(name="agent", role="assistant", content=bs),
        st.lists(_BLOCKS, max_size=8),
    ),
    st.builds(lambda t: Msg(name="user", role="user", content=[TextBlock(text=t)]), _TEXT),
)
_CONTEXTS = st.lists(_MSG, max_size=6)


def _shape(context: list[Msg]) -> list[list[tuple[str, str]]]:
    return [[(b.type, getattr(b, "id", "")) for b in m.content] for m in context]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_CONTEXTS)
def test_shortening_keeps_every_block_in_place_and_is_stable(context: list[Msg]) -> None:
    mw = ToolOutputShorteningMiddleware(inputs=True)
    before = [m.model_copy(deep=True) for m in context]
    mw.shorten(context)
    assert mw.stats.errors == 0
    assert _shape(context) == _shape(before)
    for old, new in zip(before, context, strict=True):
        for a, b in zip(old.content, new.content, strict=True):
            if isinstance(a, ToolResultBlock) and isinstance(a.output, str):
                continue  # its text may be shortened
            if isinstance(a, ToolCallBlock) and a.input != b.input:
                assert isinstance(json.loads(b.input), dict)
                continue
            if isinstance(a, ToolResultBlock):
                assert [x.model_dump() for x in a.output] == [x.model_dump() for x in b.output]
                continue
            assert a.model_dump() == b.model_dump()
    again = [m.model_copy(deep=True) for m in context]
    mw.shorten(context)
    assert [m.model_dump() for m in context] == [m.model_dump() for m in again]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_CONTEXTS)
def test_clearing_never_touches_the_messages_it_is_given(context: list[Msg]) -> None:
    mw = ContextEditorMiddleware(ContextEditorSettings(trigger_tokens=0, keep=0, mode="plain"))
    before = [m.model_dump() for m in context]
    state: dict[str, Any] = {}
    sent = mw._edit(state, "editor", context, {"tools": []}) or context
    assert [m.model_dump() for m in context] == before
    assert _shape(sent) == _shape(context)
