"""The LiteLLM plug-in's A/B book, in a real LiteLLM proxy on 127.0.0.1 in front of the fake
provider: control sessions reach the provider as the client sent them, the others rewritten;
each arm's figures come from the usage LiteLLM reports, priced by the model each call went to;
finished sessions are logged, and ``tokenlean ab report`` reads the log."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.data import CHAT_TOOLS, ERROR, LOG
from tokenlean.ab import read_sessions
from tokenlean.cli import main
from tokenlean.cost import OPENAI
from tokenlean.prices import pricing_for
from tokenlean.proxy._ab import NewestTurn
from tokenlean.proxy._arms import priced_request
from tokenlean.proxy._sessions import session_key
from tokenlean.proxy._usage import Usage
from tokenlean.testing.upstream import FakeUpstream, Recorded, Reply, chat_completion, json_reply

from .litellm_gateway import LITELLM, NEEDS_LITELLM, Gateway, start_gateway, wait_until_up

pytestmark = NEEDS_LITELLM

SALT = "fleet-salt-0123456789"
SESSIONS = 40
#: One model the catalogue prices, one it does not know (priced at OpenAI's preset).
MODELS = ("gpt-4o", "gpt-test")
USAGE = {
    "prompt_tokens": 1000,
    "completion_tokens": 50,
    "total_tokens": 1050,
    "prompt_tokens_details": {"cached_tokens": 600},
}
CALLBACK = f"""
from pathlib import Path

from tokenlean.proxy.litellm import TokenleanCallback
from tokenlean.raw import RawSettings

here = Path(__file__).parent
handler = TokenleanCallback(
    settings=RawSettings(originals_dir=here / "originals"),
    ab=0.5,
    salt={SALT!r},
    ab_log=here / "ab-sessions.jsonl",
    ab_idle=1.0,
)
"""


def _answer(request: Recorded) -> Reply:
    if b"please fail" in request.body:
        return json_reply({"error": {"message": "bad request", "type": "invalid_request"}}, 400)
    return json_reply(chat_completion("done", usage=USAGE))


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    root = tmp_path_factory.mktemp("litellm-ab")
    files = {"ab_callbacks.py": CALLBACK}
    with FakeUpstream(script=_answer) as upstream:
        process, started = start_gateway(
            root / "gateway", upstream, "ab_callbacks.handler", files=files, models=MODELS
        )
        try:
            wait_until_up(process, started)
            yield started
        finally:
            process.terminate()
            process.wait(60)


def _first(session: int) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    return [
        {"role": "user", "content": f"session {session}: run the tests"},
        {"role": "assistant", "content": "running them", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": LOG},
    ]


def _run_sessions(gateway: Gateway) -> dict[int, list[Recorded]]:
    """Two calls per session, each session on one model; what the provider got, by session."""
    client, sent = gateway.client(), {}
    for session in range(SESSIONS):
        model, history = MODELS[session % 2], _first(session)
        later = [*history, {"role": "assistant", "content": "1 failed"},
                 {"role": "user", "content": "fix it"}]  # fmt: skip
        before = len(gateway.chats())
        for messages in (history, later):
            client.chat.completions.create(model=model, messages=messages, tools=CHAT_TOOLS)  # type: ignore[arg-type]  # plain dicts, as agents send them
        sent[session] = gateway.chats()[before:]
    return sent


def _label(session: int) -> str:
    return session_key("openai_chat", {}, {"messages": _first(session)}, salt=SALT.encode())[0]


def _logged(path: Path, requests: int) -> list[dict[str, Any]]:
    """The log's lines once they hold ``requests`` requests (sessions finish after 1 s idle)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        lines = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
        if sum(x["requests"] for x in lines) >= requests:
            return lines
        time.sleep(0.2)
    raise AssertionError(f"the A/B log did not reach {requests} requests")


def _catalogue_in_gateway() -> bool:
    """Whether LiteLLM's environment has the price catalogue (it prices gpt-4o in dollars)."""
    python = Path(str(LITELLM)).with_name("python")
    probe = "import importlib.util as u; print(bool(u.find_spec('genai_prices')))"
    run = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60)
    return run.stdout.strip() == "True"


def test_ab_over_40_sessions_is_logged_per_arm_and_read_by_the_report(
    gateway: Gateway, capsys: pytest.CaptureFixture[str]
):
    sent = _run_sessions(gateway)
    arms = {}
    for session, (first, second) in sent.items():
        content = first.json()["messages"][2]["content"]
        arms[_label(session)] = "control" if content == LOG else "tokenlean"
        if arms[_label(session)] == "control":  # as the client sent it, on both calls
            assert first.json()["messages"] == _first(session)
            assert second.json()["messages"][:3] == _first(session)
        else:
            assert ERROR in content and len(content) < len(LOG) // 5
            assert second.json()["messages"][2]["content"] == content
    assert set(arms.values()) == {"control", "tokenlean"}

    path = Path(gateway.cache).parent / "ab-sessions.jsonl"
    lines = _logged(path, 2 * SESSIONS)
    read = read_sessions([path])
    assert {s.key: s.arm for s in read.sessions} == arms  # each session in the arm it was sent in
    assert all(s.sums["requests"] == 2 for s in read.sessions)
    one = Usage(output_tokens=50, input_tokens=1000, cached_tokens=600, written_tokens=0)
    gpt_4o = pricing_for("gpt-4o", provider="openai") if _catalogue_in_gateway() else OPENAI
    for model, pricing in zip(MODELS, (gpt_4o, OPENAI), strict=True):
        expected = priced_request(one, pricing, 200, NewestTurn(1, 0, 0), 0.0)
        of_model = [x for x in lines if x["model"] == model]
        assert sum(x["requests"] for x in of_model) == SESSIONS  # 20 sessions, 2 calls each
        assert sum(x["cache_read_tokens"] for x in of_model) == 600 * SESSIONS
        assert sum(x["input_tokens"] for x in of_model) == 400 * SESSIONS
        assert sum(x["tool_results"] for x in of_model) == SESSIONS // 2  # the first calls
        assert sum(x["cost"] for x in of_model) == pytest.approx(expected.cost * SESSIONS)
    said = gateway.log.read_text(errors="replace").count("unknown model gpt-test: priced at")
    assert said == 1  # once, however many calls named it

    assert main(["ab", "report", str(path)]) == 0
    out = capsys.readouterr().out
    counts = {arm: list(arms.values()).count(arm) for arm in ("control", "tokenlean")}
    assert f"{SESSIONS} sessions" in out
    for arm, count in counts.items():
        assert any(line.split()[:2] == [arm, str(count)] for line in out.splitlines())
    assert "difference (tokenlean - control)" in out

    # A call the provider refuses counts in its session's arm, as an error with no usage.
    with pytest.raises(openai.BadRequestError):
        messages = [{"role": "user", "content": "please fail"}]
        gateway.client().chat.completions.create(model="gpt-test", messages=messages)  # type: ignore[arg-type]  # a plain dict, as agents send it
    (failed,) = [x for x in _logged(path, 2 * SESSIONS + 1) if x["upstream_errors"]]
    assert (failed["requests"], failed["usage_unknown"], failed["cost"]) == (1, 1, 0)
