"""The README recipe for google-genai: ``tokenlean.google.wrap(genai.Client())``, with the SDK's
own automatic function calling running a real Python function as the tool.

The SDK finds the fake provider on 127.0.0.1 through ``GOOGLE_GEMINI_BASE_URL`` (which
google-genai reads, and so does everything built on it that makes its own client), and the test
reads the bodies the provider received: the second request carries the tool's long output
shortened, its error line kept, and the first request's contents unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

genai = pytest.importorskip("google.genai", reason="the recipe needs google-genai")
types = pytest.importorskip("google.genai.types")

import tokenlean.google  # noqa: E402
from tokenlean.raw import RawSettings  # noqa: E402
from tokenlean.testing.upstream import (  # noqa: E402
    FakeUpstream,
    Recorded,
    Reply,
    gemini_response,
    json_reply,
)

FAILED = "FAILED tests/test_api.py::test_login - KeyError: 'token'"
LOG = "\n".join(
    [
        *(f"collected item {i}: module pkg.part_{i % 9} loaded in 0.{i % 10}s" for i in range(200)),
        FAILED,
        *(f"collected item {i}: module pkg.part_{i % 9} loaded in 0.{i % 10}s" for i in range(200)),
        "===== 1 failed, 399 passed in 4.20s =====",
    ]
)
ANSWER = "The login test fails on a missing token."


def run_tests(target: str) -> str:
    """Run the test suite."""
    return LOG


def scripted_model(request: Recorded) -> Reply:
    """Calls ``run_tests`` once, then answers."""
    parts = [p for c in request.json()["contents"] for p in c["parts"]]
    if any("functionResponse" in p for p in parts):
        return json_reply(gemini_response(ANSWER))
    reply = gemini_response("")
    call = {"functionCall": {"name": "run_tests", "args": {"target": "tests/"}}}
    reply["candidates"][0]["content"]["parts"] = [call]
    return json_reply(reply)


def test_the_readme_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the default originals folder
    with FakeUpstream(script=scripted_model) as upstream:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", upstream.url)
        # -- as in the README --
        client = tokenlean.google.wrap(genai.Client(api_key="test-key"))
        config = types.GenerateContentConfig(tools=[run_tests])
        reply = client.models.generate_content(
            model="gemini-test", contents="Why do the tests fail?", config=config
        )
        # --
    assert reply.text == ANSWER
    first, second = (r.json() for r in upstream.requests)
    assert second["contents"][: len(first["contents"])] == first["contents"]
    (result,) = [p["functionResponse"] for p in second["contents"][-1]["parts"]]
    text = json.dumps(result["response"])
    assert FAILED in text and len(text) < len(LOG) / 4
    assert str(RawSettings().originals_dir) in text
    assert str(tmp_path) in text


def test_through_the_proxy_with_the_sdk_reading_the_base_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an agent that builds its own google-genai client (ADK) does: read the variable."""
    from tokenlean.proxy import BackgroundProxy, ProxySettings, create_app

    with FakeUpstream(script=scripted_model) as upstream:
        app = create_app(ProxySettings(upstream=upstream.url, originals_dir=tmp_path))
        with BackgroundProxy(app) as proxy:
            monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", proxy.url)
            client: Any = genai.Client(api_key="test-key")
            config = types.GenerateContentConfig(tools=[run_tests])
            reply = client.models.generate_content(
                model="gemini-test", contents="Why do the tests fail?", config=config
            )
    assert reply.text == ANSWER
    text = json.dumps(upstream.requests[-1].json()["contents"][-1])
    assert FAILED in text and len(text) < len(LOG) / 4
