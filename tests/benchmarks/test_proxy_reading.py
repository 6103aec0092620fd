"""benchmarks.proxy_reading: the requests are a growing conversation whose cache breakpoint moves
to the newest message, and each step of the proxy's reading of them is timed."""

from __future__ import annotations

import json

import pytest
from benchmarks.proxy_reading import WARM_UP, conversation, read_in_turn

from tests.data import needs_shared
from tokenlean.raw import Api, list_key


@needs_shared
def test_the_requests_grow_and_move_their_breakpoint_and_each_step_is_timed():
    bodies = conversation(60_000, WARM_UP + 4)
    assert len(bodies) == WARM_UP + 4 and all(len(raw) <= 60_000 for raw in bodies)
    before, after = (json.loads(raw)["messages"] for raw in bodies[-2:])
    assert len(after) > len(before)
    newest = len(before) - 1
    assert "cache_control" in json.dumps(before[newest])
    assert after[newest] != before[newest] and "cache_control" not in json.dumps(after[newest])
    per_request = read_in_turn(bodies)
    assert set(per_request) == {"scan", "view", "counting"}
    assert all(ms >= 0 for ms in per_request.values()) and sum(per_request.values()) > 0


@needs_shared
@pytest.mark.parametrize("api", ["openai_chat", "openai_responses", "gemini"])
def test_the_other_apis_requests_grow_in_their_shape_and_each_step_is_timed(api: Api):
    bodies = conversation(60_000, WARM_UP + 2, api)
    assert len(bodies) == WARM_UP + 2
    key = list_key(api)
    before, after = (json.loads(raw)[key] for raw in bodies[-2:])
    assert len(after) > len(before) and after[: len(before)] == before
    per_request = read_in_turn(bodies, api)
    assert set(per_request) == {"scan", "view", "counting"} and sum(per_request.values()) > 0
