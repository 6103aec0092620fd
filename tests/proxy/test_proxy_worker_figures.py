"""The sums behind ``--workers`` scrapes, in one process: books whose states are added as
another worker's (the same session counted by two workers is one session)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tokenlean.cost import ANTHROPIC, OPENAI
from tokenlean.proxy import Prepared, StatsBook
from tokenlean.proxy._workers import SharedFigures

from .test_metrics import parse

SALT = b"one salt for every worker"


def _book() -> StatsBook:
    pricing = {"anthropic": ANTHROPIC, "openai_chat": OPENAI, "openai_responses": OPENAI}
    return StatsBook(pricing, salt=SALT)


def _request(book: StatsBook, session: str, turns: int) -> None:
    messages: list[Any] = [{"role": "user", "content": f"turn {i}"} for i in range(turns)]
    raw = json.dumps({"model": "m", "max_tokens": 8, "messages": messages}).encode()
    headers = {"x-tokenlean-session": session}
    assert book.record("anthropic", headers, Prepared(raw, raw, None), 200) is not None


def test_a_session_counted_by_two_workers_is_summed_as_one():
    first, second = _book(), _book()
    _request(first, "alpha", 1)
    _request(second, "alpha", 2)
    _request(second, "beta", 1)
    both = [first.state(), second.state()]
    summed = first.snapshot(states=both)
    assert summed["total"]["requests"] == 3
    assert sorted(s["requests"] for s in summed["sessions"].values()) == [1, 2]
    alpha = first.snapshot("alpha", states=both)
    assert alpha["total"]["requests"] == 2 and len(alpha["sessions"]) == 1
    assert first.snapshot() == first.snapshot(states=[first.state()])  # alone: as before


def test_shared_figures_add_the_files_of_the_other_workers(tmp_path: Path):
    first, second = _book(), _book()
    _request(first, "alpha", 1)
    for turns in (1, 2):
        _request(second, "beta", turns)
    other = {"metrics": second.metrics.state(), "arms": None, "stats": second.state()}
    (tmp_path / "another-worker.json").write_text(json.dumps(other))
    figures = SharedFigures(first, tmp_path)
    figures.write()  # its own file, written again by each of its scrapes
    samples = parse(figures.exposition())
    requests = [v for (name, _), v in samples.items() if name == "tokenlean_requests_total"]
    assert requests == [3]
    assert figures.snapshot()["total"]["requests"] == 3
    (tmp_path / "broken.json").write_text("{")  # a file cut short is left out, not fatal
    assert figures.snapshot()["total"]["requests"] == 3
