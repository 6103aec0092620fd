"""A gateway call's data rewritten as the proxy rewrites a body (no gateway installed needed);
``test_litellm.py`` runs it inside a real LiteLLM proxy."""

from __future__ import annotations

import copy
import enum
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.data import LOG
from tokenlean.raw import Api, RawSettings, rewrite_call, rewrite_request
from tokenlean.raw.bodies import body
from tokenlean.transcript import Message, ToolCall

RUN = [
    Message(role="system", content="You are a coding agent."),
    Message(role="user", content="run the tests"),
    Message(role="assistant", content="", tool_calls=(ToolCall("c1", "bash", {"cmd": "pytest"}),)),
    Message(role="tool", content=LOG, tool_call_id="c1"),
]
KEY = {"anthropic": "messages", "openai_chat": "messages", "openai_responses": "input"}


class CallType(str, enum.Enum):  # the shape of LiteLLM's own CallTypes
    acompletion = "acompletion"


def _call_data(api: Api) -> dict[str, Any]:
    """A request body as a gateway hands it on: with its own keys, some of them not JSON."""
    return {**body(api, RUN), "metadata": {"user_api_key": "hashed"}, "logging": object()}


@pytest.mark.parametrize(
    ("call_type", "api"),
    [
        ("completion", "openai_chat"),
        (CallType.acompletion, "openai_chat"),
        ("anthropic_messages", "anthropic"),
        ("aresponses", "openai_responses"),
    ],
)
def test_the_message_list_is_rewritten_as_the_proxy_rewrites_it(
    tmp_path: Path, call_type: object, api: Api
):
    settings = RawSettings(originals_dir=tmp_path)
    data = _call_data(api)
    before = copy.deepcopy({k: v for k, v in data.items() if k != "logging"})
    out = rewrite_call(call_type, data, settings)
    assert out is not None
    key = KEY[api]
    expected = rewrite_request(api, {key: data[key]}, settings=settings)
    assert expected is not None
    assert out[key] == expected.body[key]
    assert out[key] != data[key]  # the long log was shortened
    assert all(out[k] is v for k, v in data.items() if k != key)  # everything else as it came
    assert {k: v for k, v in data.items() if k != "logging"} == before  # never mutated


def test_other_calls_and_short_histories_go_on_untouched(tmp_path: Path):
    settings = RawSettings(originals_dir=tmp_path)
    assert rewrite_call("aembedding", {"input": ["a" * 10_000]}, settings) is None
    assert rewrite_call("acompletion", body("openai_chat", RUN[:2]), settings) is None
    assert rewrite_call("acompletion", {"messages": "not a list"}, settings) is None


def test_a_failing_rewrite_leaves_the_call_as_it_came(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    settings = RawSettings(originals_dir=not_a_folder)  # keeping an original fails
    with caplog.at_level(logging.WARNING, logger="tokenlean"):
        assert rewrite_call("acompletion", _call_data("openai_chat"), settings) is None
    assert "sent unchanged" in caplog.text
