"""Zero prefix drift: a client re-sending its raw history each turn gets the same bytes upstream.

Conversations come from the real dev trajectories: request *k* carries the history up to the
model's *k*-th call, with the cache breakpoint moved to its newest block (as Claude Code does).
Rewritten, request *k* must start with exactly the messages of rewritten request *k-1*, for
every API; and a cold process (no memo) must rewrite any request to the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tokenlean.raw import Api, RawSettings, rewrite_request
from tokenlean.raw.bodies import body, call_points, mark_newest, strip_cache_control
from tokenlean.replay._formats import Trajectory
from tokenlean.shorten._options import ShortenSettings

from .conftest import sample_trajectories

APIS: list[Api] = ["anthropic", "openai_chat", "openai_responses", "gemini"]
KEY = {
    "anthropic": "messages",
    "openai_chat": "messages",
    "openai_responses": "input",
    "gemini": "contents",
}
RUNS = sample_trajectories(per_source=2)
needs_shared = pytest.mark.skipif(not RUNS, reason="needs ../shared/data/trajectories")


def _requests(api: Api, run: Trajectory, settings: RawSettings) -> list[list[str]]:
    """Each rewritten request's items, as JSON without cache breakpoints."""
    out: list[list[str]] = []
    for k in call_points(run.messages):
        request = mark_newest(api, body(api, run.messages[:k]))
        result = rewrite_request(api, request, settings=settings)
        sent = result.body if result is not None else request
        out.append([json.dumps(strip_cache_control(item)) for item in sent[KEY[api]]])
    return out


def _assert_no_drift(requests: list[list[str]]) -> None:
    for k in range(1, len(requests)):
        previous, current = requests[k - 1], requests[k]
        assert current[: len(previous)] == previous, f"request {k} rewrote what {k - 1} sent"


@needs_shared
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("run", RUNS, ids=lambda r: r.id[:50])
def test_zero_drift_on_real_runs(api: Api, run: Trajectory, tmp_path: Path) -> None:
    settings = RawSettings(originals_dir=tmp_path)
    requests = _requests(api, run, settings)
    _assert_no_drift(requests)
    original = [
        json.dumps(i) for i in body(api, run.messages[: call_points(run.messages)[-1]])[KEY[api]]
    ]
    assert len(requests[-1]) == len(original)  # nothing added, nothing dropped


SETTINGS = st.builds(
    dict,
    min_tokens=st.sampled_from([0, 50, 100, 400]),
    dedupe=st.booleans(),
    shorten_inputs=st.booleans(),
    min_saving=st.sampled_from([0.0, 0.1, 0.5]),
    options=st.sampled_from(
        [ShortenSettings(), ShortenSettings(max_tokens=60, code_max_tokens=120, similar_run=3)]
    ),
)


@needs_shared
@hsettings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    api=st.sampled_from(APIS),
    run=st.sampled_from(RUNS or [None]),
    options=SETTINGS,
    probe=st.floats(0, 1),
)
def test_zero_drift_and_cold_equals_warm(
    api: Api, run: Trajectory, options: dict[str, Any], probe: float, tmp_path: Path
) -> None:
    settings = RawSettings(originals_dir=tmp_path, **options)
    settings.planner.forget()
    warm = _requests(api, run, settings)
    _assert_no_drift(warm)
    # a cold process (another proxy behind the load balancer) sends the same bytes
    settings.planner.forget()
    k = min(int(probe * len(warm)), len(warm) - 1)
    point = call_points(run.messages)[k]
    request = mark_newest(api, body(api, run.messages[:point]))
    result = rewrite_request(api, request, settings=settings)
    cold = result.body if result is not None else request
    assert [json.dumps(strip_cache_control(i)) for i in cold[KEY[api]]] == warm[k]


@needs_shared
def test_the_rewrite_saves_on_most_runs(tmp_path: Path) -> None:
    settings = RawSettings(originals_dir=tmp_path)
    saved = 0
    for run in RUNS:
        last = body("anthropic", run.messages[: call_points(run.messages)[-1]])
        result = rewrite_request("anthropic", last, settings=settings)
        saved += result is not None and result.tokens_after < result.tokens_before
    assert saved >= len(RUNS) / 2
