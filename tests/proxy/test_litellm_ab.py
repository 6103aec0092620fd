"""The LiteLLM callback's A/B arms: control calls go on as sent, the others rewritten, and each
session is in the arm a tokenlean proxy with the same salt puts it in."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tokenlean.proxy import BackgroundProxy, ProxySettings, create_app, default_rewriter
from tokenlean.raw import RawSettings
from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import PASSING_LOG

pytest.importorskip("litellm", reason="the LiteLLM callback needs litellm (the litellm extra)")

SALT = "fleet-salt-0123456789"


def _data(session: int) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    return {
        "model": "gpt-test",
        "messages": [
            {"role": "user", "content": f"session {session}: run the tests"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": PASSING_LOG},
        ],
    }


def test_callback_arms_match_the_proxy_with_the_same_salt(tmp_path: Path):
    from tokenlean.proxy.litellm import TokenleanCallback

    handler = TokenleanCallback(settings=RawSettings(originals_dir=tmp_path), ab=0.5, salt=SALT)
    arms = {}
    for session in range(40):
        data = _data(session)
        out = asyncio.run(handler.async_pre_call_hook(None, None, data, "acompletion"))
        arms[session] = "control" if out is None else "tokenlean"
        if out is not None:
            assert len(out["messages"][-1]["content"]) < len(PASSING_LOG)
    assert set(arms.values()) == {"control", "tokenlean"}

    with FakeUpstream() as upstream:
        settings = ProxySettings(upstream=upstream.url, session_salt=SALT, ab_share=0.5)
        app = create_app(settings, rewriter=default_rewriter(tmp_path))
        with BackgroundProxy(app) as proxy:
            for session in range(40):
                body = json.dumps(_data(session)).encode()
                httpx.post(proxy.url + "/v1/chat/completions", content=body, timeout=60)
                same = upstream.requests[-1].body == body
                assert arms[session] == ("control" if same else "tokenlean")


def test_ab_needs_a_salt():
    from tokenlean.proxy.litellm import TokenleanCallback

    with pytest.raises(ValueError, match="salt"):
        TokenleanCallback(ab=0.5)
