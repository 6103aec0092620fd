"""make_anthropic_classifier through the real anthropic SDK against an httpx.MockTransport."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import pytest

try:  # anthropic 2.x talks HTTP through its own httpx fork, and rejects plain httpx clients
    import httpx2 as httpx
except ImportError:  # pragma: no cover - older SDKs use httpx itself
    import httpx  # type: ignore[no-redef]

from tokenlean import make_anthropic_classifier
from tokenlean.token_saving._anthropic_classifier import parse_keep_indices
from tokenlean.token_saving._words import heuristic_classifier

WORDS = [
    "the",
    "parser",
    "really",
    "just",
    "drops",
    "the",
    "charset",
    "value",
    "42",
    "in",
    "utf-8",
    "mode",
]


def _message(text: str) -> dict[str, Any]:
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 50, "output_tokens": 10},
    }


class FakeAnthropic:
    """A real ``anthropic.Anthropic`` client whose HTTP goes to ``respond``; records requests."""

    def __init__(self, respond: Callable[[httpx.Request], httpx.Response]) -> None:
        self.requests: list[dict[str, Any]] = []

        def handler(request: httpx.Request) -> httpx.Response:
            self.requests.append(json.loads(request.content))
            return respond(request)

        self.client = anthropic.Anthropic(
            api_key="sk-test",
            max_retries=0,
            http_client=httpx.Client(transport=httpx.MockTransport(handler)),
        )


def replying(text: str) -> FakeAnthropic:
    return FakeAnthropic(lambda request: httpx.Response(200, json=_message(text)))


def test_labels_come_from_the_model_reply() -> None:
    fake = replying("[2, 3, 9, 10]")
    classify = make_anthropic_classifier(fake.client)
    keep = classify(WORDS)
    assert [w for w, k in zip(WORDS, keep, strict=True) if k] == ["parser", "really", "42", "in"]
    (request,) = fake.requests
    assert request["model"] == "claude-haiku-4-5-20251001"
    assert "Keep about 50% of the words" in request["system"]
    assert "1: the\n2: parser" in request["messages"][0]["content"]


def test_the_tier_ratio_overrides_the_default_in_the_prompt() -> None:
    fake = replying("[1]")
    classify = make_anthropic_classifier(fake.client, model="claude-x", target_keep_ratio=0.4)
    classify(WORDS)
    classify(WORDS, keep_ratio=0.3)
    assert [r["model"] for r in fake.requests] == ["claude-x", "claude-x"]
    assert "Keep about 40%" in fake.requests[0]["system"]
    assert "Keep about 30%" in fake.requests[1]["system"]


def test_reply_in_a_code_fence_with_prose_is_accepted() -> None:
    classify = make_anthropic_classifier(replying("Sure:\n```json\n[1, 2]\n```").client)
    assert classify(WORDS)[:3] == [True, True, False]


def _status(code: int) -> FakeAnthropic:
    return FakeAnthropic(lambda request: httpx.Response(code, json={"type": "error"}))


def _raises(exc: Exception) -> FakeAnthropic:
    def respond(request: httpx.Request) -> httpx.Response:
        raise exc

    return FakeAnthropic(respond)


@pytest.mark.parametrize(
    "fake",
    [
        pytest.param(_status(500), id="server-error"),
        pytest.param(_status(429), id="rate-limit"),
        pytest.param(_raises(httpx.ReadTimeout("slow")), id="timeout"),
        pytest.param(_raises(httpx.ConnectError("down")), id="connection"),
        pytest.param(replying("I would keep the important ones."), id="no-array"),
        pytest.param(replying("[1, 2, 99]"), id="index-out-of-range"),
        pytest.param(replying('["one", 2]'), id="not-integers"),
        pytest.param(replying("[]"), id="keep-nothing"),
        pytest.param(replying("[1, 2,"), id="broken-json"),
        pytest.param(
            FakeAnthropic(lambda r: httpx.Response(200, content=b"<html>")), id="not-json-body"
        ),
    ],
)
def test_any_failure_falls_back_to_the_heuristic_at_the_same_ratio(fake: FakeAnthropic) -> None:
    classify = make_anthropic_classifier(fake.client, target_keep_ratio=0.5)
    assert classify(WORDS, keep_ratio=0.3) == heuristic_classifier(WORDS, keep_ratio=0.3)
    assert classify(WORDS) == heuristic_classifier(WORDS, keep_ratio=0.5)
    assert len(fake.requests) == 2  # it did try the model each time


def test_the_timeout_is_sent_with_the_request() -> None:
    seen: list[dict[str, Any]] = []

    def respond(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions.get("timeout", {}))
        return httpx.Response(200, json=_message("[1]"))

    make_anthropic_classifier(FakeAnthropic(respond).client, timeout=3.5)(WORDS)
    assert seen[0]["read"] == 3.5


def test_empty_input_makes_no_request() -> None:
    fake = replying("[1]")
    assert make_anthropic_classifier(fake.client)([]) == []
    assert fake.requests == []


def test_bad_configuration_raises() -> None:
    with pytest.raises(ValueError, match="target_keep_ratio"):
        make_anthropic_classifier(replying("[1]").client, target_keep_ratio=1.5)
    with pytest.raises(ValueError, match=r"messages\.create"):
        make_anthropic_classifier(object())


def test_parse_keep_indices() -> None:
    assert parse_keep_indices("[3, 1, 3]", 3) == {1, 3}
    assert parse_keep_indices("[0]", 3) is None
    assert parse_keep_indices("[true]", 3) is None
    assert parse_keep_indices("nothing", 3) is None
