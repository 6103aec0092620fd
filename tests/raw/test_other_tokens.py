"""What a body sends besides its messages (system, instructions, tools) is estimated once while
a body re-sends the same values (a frozen body's very objects, another body's equal content),
and afresh whenever they change."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.data import pytest_history
from tokenlean.raw import RawSettings, frozen_bodies, rewrite_request
from tokenlean.tokens import EstimateCounter

TOOLS = [
    {
        "name": f"Tool{i}",
        "description": f"Use this tool to do thing {i}. " * 40,
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    for i in range(8)
]
SYSTEM = [{"type": "text", "text": "You are a coding agent. " * 200}]


class Recording:
    """The default estimate, counting the texts it is given that hold the tools."""

    def __init__(self) -> None:
        self.tools_counted = 0
        self._estimate = EstimateCounter()

    def count(self, text: str) -> int:
        self.tools_counted += "Use this tool to do thing 7." in text
        return self._estimate.count(text)


def _settings(tmp_path: Path, counter: Recording) -> RawSettings:
    return RawSettings(originals_dir=tmp_path / "originals", counter=counter)


def _body(**head: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 9, "messages": pytest_history(2), **head}


def _tokens(body: dict[str, Any], settings: RawSettings) -> tuple[int, int]:
    result = rewrite_request("anthropic", body, settings=settings)
    assert result is not None
    return result.tokens_before, result.tokens_after


def test_the_same_values_sent_again_are_counted_once(tmp_path: Path):
    counter = Recording()
    settings = _settings(tmp_path, counter)
    with frozen_bodies():
        first = _tokens(_body(system=SYSTEM, tools=TOOLS), settings)
        # a short system prompt is a new string object on every request: equal is enough
        again = _tokens(_body(system=SYSTEM, tools=TOOLS), settings)
    assert again == first and counter.tools_counted == 1


def test_equal_strings_count_as_the_same_and_new_objects_are_counted_again(tmp_path: Path):
    counter = Recording()
    settings = _settings(tmp_path, counter)
    with frozen_bodies():
        first = _tokens(_body(system="be brief " * 3, tools=TOOLS), settings)
        short = _tokens(_body(system="".join(["be brief "] * 3), tools=TOOLS), settings)
        assert counter.tools_counted == 1 and short == first
        copied = _tokens(_body(system="be brief " * 3, tools=copy.deepcopy(TOOLS)), settings)
        other = _tokens(_body(system="be terse", tools=TOOLS), settings)
    assert copied == first and other != first and counter.tools_counted == 3


def test_values_of_other_bodies_are_counted_once_while_their_content_is_the_same(
    tmp_path: Path,
):
    counter = Recording()
    settings = _settings(tmp_path, counter)
    first = _tokens(_body(system=SYSTEM, tools=copy.deepcopy(TOOLS)), settings)
    again = _tokens(_body(system=copy.deepcopy(SYSTEM), tools=copy.deepcopy(TOOLS)), settings)
    assert again == first and counter.tools_counted == 1  # before: counted on every request
    other = _tokens(_body(system="be terse", tools=copy.deepcopy(TOOLS)), settings)
    assert other != first and counter.tools_counted == 2


@pytest.mark.parametrize("frozen", [True, False])
def test_values_changed_in_place_are_counted_again(tmp_path: Path, frozen: bool):
    counter = Recording()
    settings = _settings(tmp_path, counter)
    tools = copy.deepcopy(TOOLS)
    if frozen:
        with frozen_bodies():
            first = _tokens(_body(tools=tools), settings)
    else:
        first = _tokens(_body(tools=tools), settings)
    tools.append({"name": "More", "description": "a long one " * 200, "input_schema": {}})
    grown = _tokens(_body(tools=tools), settings)  # an SDK user's list, changed in place
    assert grown[0] > first[0] and counter.tools_counted == 2
