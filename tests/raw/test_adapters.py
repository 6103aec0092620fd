"""The three adapters: what they rewrite, all they leave alone, and bodies they cannot read."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tokenlean.raw import (
    Api,
    RawSettings,
    RewriteResult,
    openai_chat,
    openai_responses,
    rewrite_request,
)
from tokenlean.raw import _anthropic as anthropic_view
from tokenlean.raw._view import RawView, apply

from .bodies import LONG, SCRIPT, anthropic_body, chat_body, responses_body

READERS: dict[str, Callable[[Any], RawView | None]] = {
    "anthropic": anthropic_view.read,
    "openai_chat": openai_chat.read,
    "openai_responses": openai_responses.read,
}
BODIES: dict[str, Callable[[], dict[str, Any]]] = {
    "anthropic": anthropic_body,
    "openai_chat": chat_body,
    "openai_responses": responses_body,
}
KEY = {"anthropic": "messages", "openai_chat": "messages", "openai_responses": "input"}

# Where each rich body keeps the values the rewrite may change: the long result and the long input.
EDITED: dict[str, list[tuple[Any, ...]]] = {
    "anthropic": [("messages", 1, "content", 5, "input"), ("messages", 2, "content", 0, "content")],
    "openai_chat": [
        ("messages", 3, "tool_calls", 0, "function", "arguments"),
        ("messages", 4, "content"),
    ],
    "openai_responses": [("input", 4, "arguments"), ("input", 6, "output")],
}


def _at(body: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        body = body[key]
    return body


def _blank(body: dict[str, Any], paths: list[tuple[Any, ...]]) -> dict[str, Any]:
    out = copy.deepcopy(body)
    for path in paths:
        _at(out, path[:-1])[path[-1]] = None
    return out


@pytest.mark.parametrize("api", list(BODIES))
def test_rewrites_the_long_result_and_input_and_nothing_else(
    api: Api, settings: RawSettings
) -> None:
    body = BODIES[api]()
    before = copy.deepcopy(body)
    result = rewrite_request(api, body, settings=settings)
    assert result is not None
    assert body == before  # the input is never mutated
    result_path, input_path = EDITED[api][1], EDITED[api][0]
    shortened = _at(result.body, result_path)
    assert len(shortened) < len(LONG) / 4
    assert "ERROR disk quota exceeded on /var/data" in shortened
    assert f"full output: {settings.originals_dir}" in shortened
    cut = _at(result.body, input_path)
    cut_args = cut if isinstance(cut, dict) else json.loads(cut)
    assert len(cut_args["command"]) < len(SCRIPT) / 2 and cut_args["timeout"] == 60
    assert "lines of this input omitted after the call ran; full input: " in cut_args["command"]
    # everything else is byte-identical, in the same order
    untouched = json.dumps(_blank(result.body, EDITED[api]))
    assert untouched == json.dumps(_blank(body, EDITED[api]))
    assert (result.results_shortened, result.inputs_shortened) == (1, 1)
    assert result.tokens_after < result.tokens_before


@pytest.mark.parametrize("api", list(BODIES))
def test_untouched_parts_are_the_same_objects(api: Api, settings: RawSettings) -> None:
    body = BODIES[api]()
    result = rewrite_request(api, body, settings=settings)
    assert result is not None
    edited = {path[1] for path in EDITED[api]}
    items = body[KEY[api]]
    for i, item in enumerate(result.body[KEY[api]]):
        assert (item is items[i]) == (i not in edited)
    for key in body:
        if key != KEY[api]:
            assert result.body[key] is body[key]


def test_anthropic_keeps_thinking_server_blocks_and_cache_control(settings: RawSettings) -> None:
    body = anthropic_body()
    result = rewrite_request("anthropic", body, settings=settings)
    assert result is not None
    turn, new_turn = body["messages"][1]["content"], result.body["messages"][1]["content"]
    for j in range(5):  # thinking, redacted thinking, text, server tool use and result
        assert new_turn[j] is turn[j]
    # the result that holds an image is left alone, with its breakpoint
    assert result.body["messages"][5] is body["messages"][5]


def test_a_text_block_result_becomes_one_block_that_keeps_the_breakpoint(
    settings: RawSettings,
) -> None:
    body = anthropic_body()
    # a command's log (a file tool's read of a log would stay whole, as a file view does)
    body["messages"][4]["content"][0] |= {"name": "Bash", "input": {"command": "./nightly -v"}}
    last = body["messages"][5]["content"][0]
    last["content"] = [
        {"type": "text", "text": LONG[: len(LONG) // 2]},
        {"type": "text", "text": LONG[len(LONG) // 2 :], "cache_control": {"type": "ephemeral"}},
    ]
    result = rewrite_request("anthropic", body, settings=settings)
    assert result is not None
    blocks = result.body["messages"][5]["content"][0]["content"]
    assert len(blocks) == 1 and blocks[0]["type"] == "text"
    assert blocks[0]["cache_control"] == {"type": "ephemeral"}
    assert len(blocks[0]["text"]) < len(LONG) / 4


@pytest.mark.parametrize("api", list(BODIES))
def test_no_edit_means_the_same_body(api: Api) -> None:
    body = BODIES[api]()
    view = READERS[api](body)
    assert view is not None
    same = apply(body, view, [])
    assert same == body and all(a is b for a, b in zip(same[KEY[api]], body[KEY[api]], strict=True))


def test_short_history_is_not_rewritten(settings: RawSettings) -> None:
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "ls", "input": {"path": "."}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "a.txt\nb.txt"}],
            },
        ]
    }
    assert rewrite_request("anthropic", body, settings=settings) is None


def test_the_view_reads_what_the_model_reads() -> None:
    view = anthropic_view.read(anthropic_body())
    assert view is not None
    roles = [m.role for m in view.messages]
    assert roles == ["user", "assistant", "tool", "user", "system", "assistant", "tool"]
    assert not view.messages[6].is_text_only  # the result with an image
    assert 6 not in view.results and 2 in view.results
    responses = openai_responses.read(responses_body())
    assert responses is not None
    turn = responses.messages[2]  # reasoning, message and call read as one assistant turn
    assert turn.role == "assistant" and turn.text == "Running it."
    assert [c.id for c in turn.tool_calls] == ["call_1"]
    chat = openai_chat.read(chat_body())
    assert chat is not None
    assert [c.args for c in chat.messages[6].tool_calls] == [{}]  # arguments that are not JSON
    assert (6, "call_3") not in chat.calls and (3, "call_1") in chat.calls


def test_bad_api_and_settings_raise() -> None:
    with pytest.raises(ValueError, match="api"):
        rewrite_request("bedrock", {}, settings=RawSettings())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="settings"):
        rewrite_request("anthropic", {}, settings=None)  # type: ignore[arg-type]
    for kwargs in ({"min_tokens": -1}, {"min_saving": 1.0}, {"never": "Bash"}, {"dedupe": 1}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            RawSettings(**kwargs)  # type: ignore[arg-type]


MALFORMED: list[tuple[Api, Any]] = [
    ("anthropic", []),
    ("anthropic", {"messages": "hello"}),
    ("anthropic", {"messages": [1, None, "x", {"role": 3}, {"content": LONG}]}),
    (
        "anthropic",
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": 7, "content": LONG}],
                }
            ]
        },
    ),
    ("anthropic", {"messages": [{"role": "assistant", "content": {"type": "tool_use"}}]}),
    (
        "anthropic",
        {
            "messages": [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "t", "name": "x", "input": "not an object"}
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t", "content": {"text": LONG}}
                    ],
                },
            ]
        },
    ),
    ("openai_chat", {"messages": {"role": "user"}}),
    ("openai_chat", {"messages": [{"role": "tool", "content": LONG}]}),
    (
        "openai_chat",
        {
            "messages": [
                {"role": "assistant", "tool_calls": "x"},
                {"role": "tool", "tool_call_id": "x", "content": 5},
            ]
        },
    ),
    ("openai_responses", {"input": "just text"}),
    ("openai_responses", {"input": [None, {"type": "function_call_output", "output": LONG}]}),
    (
        "openai_responses",
        {"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": [1]}]},
    ),
]


@pytest.mark.parametrize(("api", "body"), MALFORMED)
def test_malformed_bodies_pass_through(api: Api, body: Any, settings: RawSettings) -> None:
    assert rewrite_request(api, body, settings=settings) is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "content",
                    "type",
                    "text",
                    "tool_use_id",
                    "id",
                    "name",
                    "input",
                    "call_id",
                    "output",
                    "arguments",
                    "tool_calls",
                    "function",
                    "tool_call_id",
                    "messages",
                    "stdout",
                    "stderr",
                    "action",
                    "commands",
                    "command",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=30,
)
ROLES = st.sampled_from(["user", "assistant", "tool", "system", "developer", 7])
TYPES = st.sampled_from(
    [
        "text",
        "tool_use",
        "tool_result",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "shell_call",
        "shell_call_output",
        "local_shell_call",
        "local_shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "image",
        "reasoning",
    ]
)
MESSAGE = st.fixed_dictionaries(
    {"role": ROLES, "type": TYPES},
    optional={
        "content": JSON
        | st.just(LONG)
        | st.lists(
            st.fixed_dictionaries(
                {"type": TYPES},
                optional={
                    "text": st.just(LONG) | JSON,
                    "tool_use_id": JSON,
                    "content": JSON | st.just(LONG),
                    "id": JSON,
                    "input": JSON,
                    "name": JSON,
                },
            ),
            max_size=3,
        ),
        "tool_call_id": JSON,
        "call_id": JSON | st.just("c"),
        "output": JSON
        | st.just(LONG)
        | st.lists(st.fixed_dictionaries({"stdout": st.just(LONG) | JSON}), max_size=2),
        "action": JSON,
        "operation": JSON
        | st.fixed_dictionaries({"diff": st.just(LONG) | JSON}, optional={"path": JSON}),
        "name": JSON,
        "arguments": JSON,
        "tool_calls": JSON,
    },
)


@hsettings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(api=st.sampled_from(list(BODIES)), items=st.lists(MESSAGE | JSON, max_size=6))
def test_random_bodies_never_raise(api: Api, items: list[Any], tmp_path: Path) -> None:
    body = {KEY[api]: items}
    frozen = copy.deepcopy(body)
    result = rewrite_request(api, body, settings=RawSettings(originals_dir=tmp_path))
    assert result is None or isinstance(result, RewriteResult)
    assert body == frozen
