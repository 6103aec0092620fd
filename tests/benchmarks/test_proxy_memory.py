"""benchmarks.proxy_memory: each body is a new conversation with a screenshot of its own, and
the resident memory is read as the flood goes."""

from __future__ import annotations

import json

from benchmarks.proxy_memory import body, flood


def test_each_body_shows_a_screenshot_of_its_own_twice():
    first, second = (body(n, 4096).decode() for n in (0, 1))
    shot = json.loads(first)["messages"][0]["content"][1]["source"]["data"]
    assert len(shot) == 4096 and first.count(shot) == 2 and shot not in second


def test_the_flood_reports_as_it_goes():
    readings = flood(6, 8, 3)
    assert [n for n, _ in readings] == [3, 6] and all(mb >= 0 for _, mb in readings)
