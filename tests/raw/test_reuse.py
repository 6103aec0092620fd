"""A re-sent history (bodies nobody mutates: ``frozen_bodies``) gets the very message objects
the rewrite made for it the last time, so what is derived from them by identity downstream
(the proxy's serialising) is not made again; an SDK user's bodies get new ones every time."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from tests.data import pytest_history
from tokenlean.raw import RawSettings, frozen_bodies, rewrite_request


def _body(results: int) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 10, "messages": pytest_history(results)}


def _shortened(before: dict[str, Any], after: dict[str, Any]) -> list[int]:
    return [i for i, m in enumerate(after["messages"]) if m is not before["messages"][i]]


def test_a_frozen_body_sent_again_gets_the_same_new_messages(tmp_path: Path):
    settings = RawSettings(originals_dir=tmp_path)
    body = _body(3)
    kept = copy.deepcopy(body)
    with frozen_bodies():
        first = rewrite_request("anthropic", body, settings=settings)
        again = rewrite_request("anthropic", body, settings=settings)
    assert first is not None and again is not None
    changed = _shortened(body, first.body)
    assert changed == [2, 4, 6]
    assert all(first.body["messages"][i] is again.body["messages"][i] for i in changed)
    assert body == kept  # never mutated


def test_a_body_that_may_be_mutated_gets_new_messages_every_time(tmp_path: Path):
    settings = RawSettings(originals_dir=tmp_path)
    body = _body(2)
    first = rewrite_request("anthropic", body, settings=settings)
    again = rewrite_request("anthropic", body, settings=settings)
    assert first is not None and again is not None
    changed = _shortened(body, first.body)
    assert changed
    assert all(first.body["messages"][i] is not again.body["messages"][i] for i in changed)
    assert first.body == again.body


def test_other_edits_of_the_same_message_are_not_given_the_kept_one(tmp_path: Path):
    """Markers name the originals' folder: two folders, two texts for one message."""
    body = _body(1)
    with frozen_bodies():
        one = rewrite_request("anthropic", body, settings=RawSettings(originals_dir=tmp_path / "a"))
        two = rewrite_request("anthropic", body, settings=RawSettings(originals_dir=tmp_path / "b"))
    assert one is not None and two is not None
    assert one.body["messages"][2] != two.body["messages"][2]
    assert str(tmp_path / "b") in str(two.body["messages"][2])
