"""The whole bill: the output tokens each answer reports, read by the proxy as the answer passes
(streamed and not, through the real SDKs), priced per provider beside the billed input in the
log line, ``GET /tokenlean/stats``, ``GET /metrics`` and the stop summary."""

from __future__ import annotations

import gzip
import json
import logging
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tokenlean.proxy import BackgroundProxy, summary_lines
from tokenlean.raw.bodies import body
from tokenlean.testing import upstream as fake
from tokenlean.testing.upstream import FakeUpstream, Recorded, Reply
from tokenlean.transcript import Message, ToolCall

from .proxy_support import PASSING_LOG, ProxyFactory, free_port, wait_for
from .test_metrics import parse

ANSWER = "Hello from the fake upstream"
OUTPUT, PROMPT, CACHED = 321, 1027, 1000
#: Each API's usage for OUTPUT tokens out, PROMPT in of which CACHED read from the cache.
USAGE: dict[str, dict[str, Any]] = {
    "anthropic": {
        "input_tokens": PROMPT - CACHED - 20,
        "cache_creation_input_tokens": 20,
        "cache_read_input_tokens": CACHED,
        "output_tokens": OUTPUT,
    },
    "openai_chat": {
        "prompt_tokens": PROMPT,
        "completion_tokens": OUTPUT,
        "total_tokens": PROMPT + OUTPUT,
        "prompt_tokens_details": {"cached_tokens": CACHED},
    },
    "openai_responses": {
        "input_tokens": PROMPT,
        "input_tokens_details": {"cached_tokens": CACHED},
        "output_tokens": OUTPUT,
        "output_tokens_details": {"reasoning_tokens": 21},
        "total_tokens": PROMPT + OUTPUT,
    },
    "gemini": {  # thoughts are output too
        "promptTokenCount": PROMPT,
        "cachedContentTokenCount": CACHED,
        "candidatesTokenCount": OUTPUT - 21,
        "thoughtsTokenCount": 21,
        "totalTokenCount": PROMPT + OUTPUT,
    },
}
#: The output price of each API's default pricing, in uncached input tokens.
PRICE = {"anthropic": 5.0, "openai_chat": 4.0, "openai_responses": 4.0, "gemini": 4.0}
TRANSCRIPT = [
    Message("system", "You are a coding agent."),
    Message("user", "Run the tests."),
    Message("assistant", tool_calls=(ToolCall("c1", "bash", {"cmd": "pytest"}),)),
    Message("tool", PASSING_LOG, tool_call_id="c1", name="bash"),
]


def answers_with_usage(request: Recorded) -> Reply:
    """The fake upstream's canned answers, with :data:`USAGE` in them."""
    stream = bool(request.body and json.loads(request.body).get("stream"))
    if request.path.endswith((":generateContent", ":streamGenerateContent")):
        usage = USAGE["gemini"]
        if "alt=sse" in request.query:
            return fake.sse_reply(fake.gemini_events(ANSWER, usage=usage))
        return fake.json_reply(fake.gemini_response(ANSWER, usage=usage))
    if request.path == "/v1/messages":
        usage = USAGE["anthropic"]
        blocks = [{"type": "text", "text": ANSWER}]
        if stream:
            return fake.sse_reply(fake.anthropic_events(blocks, usage=usage))
        return fake.json_reply(fake.anthropic_message(ANSWER, usage=usage))
    if request.path == "/v1/chat/completions":
        asked = json.loads(request.body).get("stream_options", {}).get("include_usage")
        usage = USAGE["openai_chat"] if asked or not stream else None
        if stream:
            return fake.sse_reply(fake.chat_events(ANSWER, usage=usage))
        return fake.json_reply(fake.chat_completion(ANSWER, usage=usage))
    usage = USAGE["openai_responses"]
    if stream:
        return fake.sse_reply(fake.response_events(ANSWER, usage=usage))
    return fake.json_reply(fake.response_object(ANSWER, usage=usage))


def _anthropic(url: str, stream: bool) -> str:
    client = anthropic.Anthropic(base_url=url, api_key="sk-ant", max_retries=0)
    request = body("anthropic", TRANSCRIPT, model="claude-test")
    if stream:
        with client.messages.stream(**request) as events:
            return events.get_final_text()
    block = client.messages.create(**request).content[0]
    return block.text if block.type == "text" else ""


def _openai(url: str, session: str = "s") -> openai.OpenAI:
    headers = {"x-tokenlean-session": session}
    return openai.OpenAI(
        base_url=url + "/v1", api_key="sk-test", max_retries=0, default_headers=headers
    )


def _chat(url: str, stream: bool, include_usage: bool = True, session: str = "s") -> str:
    request = body("openai_chat", TRANSCRIPT, model="gpt-test")
    client = _openai(url, session)
    if not stream:
        return client.chat.completions.create(**request).choices[0].message.content or ""
    options: Any = {"include_usage": True} if include_usage else openai.NOT_GIVEN
    chunks = client.chat.completions.create(**request, stream=True, stream_options=options)
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).strip()


def _responses(url: str, stream: bool) -> str:
    request = body("openai_responses", TRANSCRIPT, model="gpt-test")
    client = _openai(url)
    if not stream:
        return client.responses.create(**request).output_text
    events = list(client.responses.create(**request, stream=True))
    return events[-1].response.output_text  # type: ignore[union-attr]


def _gemini(url: str, stream: bool) -> str:
    genai = pytest.importorskip("google.genai", reason="needs google-genai (the dev extra)")
    types = pytest.importorskip("google.genai.types")
    request = body("gemini", TRANSCRIPT)
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url=url))
    config = types.GenerateContentConfig(system_instruction="You are a coding agent.")
    if not stream:
        reply = client.models.generate_content(
            model="gemini-test", contents=request["contents"], config=config
        )
        return str(reply.text)
    chunks = client.models.generate_content_stream(
        model="gemini-test", contents=request["contents"], config=config
    )
    return "".join(c.text or "" for c in chunks)


CASES: dict[str, tuple[str, Callable[[str], str]]] = {
    "anthropic": ("anthropic", lambda url: _anthropic(url, False)),
    "anthropic streamed": ("anthropic", lambda url: _anthropic(url, True)),
    "chat": ("openai_chat", lambda url: _chat(url, False)),
    "chat streamed with include_usage": ("openai_chat", lambda url: _chat(url, True)),
    "responses": ("openai_responses", lambda url: _responses(url, False)),
    "responses streamed": ("openai_responses", lambda url: _responses(url, True)),
    "gemini": ("gemini", lambda url: _gemini(url, False)),
    "gemini streamed": ("gemini", lambda url: _gemini(url, True)),
}


@pytest.fixture
def with_usage() -> Any:
    with FakeUpstream(script=answers_with_usage) as upstream:
        yield upstream


def _counted(proxy: BackgroundProxy, requests: int = 1) -> dict[str, Any]:
    book = proxy.app.state.stats
    assert wait_for(lambda: book.snapshot()["total"]["requests"] == requests)
    snapshot: dict[str, Any] = book.snapshot()
    return snapshot


def _logged(caplog: pytest.LogCaptureFixture, lines: int = 1) -> list[str]:
    """The per-request log lines, once ``lines`` of them are there: the proxy logs a request
    just after counting it, on its counting thread, so the line may trail the count."""

    def found() -> list[str]:
        return [r.getMessage() for r in caplog.records if " session " in r.getMessage()]

    assert wait_for(lambda: len(found()) >= lines)
    return found()


@pytest.mark.parametrize("case", CASES)
def test_each_answers_output_makes_the_whole_bill(
    make_proxy: ProxyFactory,
    with_usage: FakeUpstream,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    case: str,
):
    api, call = CASES[case]
    proxy = make_proxy("default", upstream=with_usage.url, originals_dir=tmp_path)
    with caplog.at_level(logging.INFO, logger="tokenlean.proxy"):
        assert call(proxy.url) == ANSWER
        snapshot = _counted(proxy)
        (line,) = _logged(caplog)
    t = snapshot["total"]
    assert t["rewritten"] == 1 and t["billed_sent"] < t["billed_in"] / 2  # the log shortened
    assert (t["output_tokens"], t["output_unknown"]) == (OUTPUT, 0)
    assert (t["upstream_input_tokens"], t["upstream_cached_tokens"]) == (PROMPT, CACHED)
    priced = PRICE[api] * OUTPUT  # the same answer with or without the rewrite
    assert t["whole_bill_in"] == pytest.approx(t["billed_in"] + priced, abs=0.11)
    assert t["whole_bill_sent"] == pytest.approx(t["billed_sent"] + priced, abs=0.11)
    ratio = t["whole_bill_saved"] / t["whole_bill_in"]
    assert t["whole_bill_saved_ratio"] == pytest.approx(ratio, abs=1e-4)
    assert 0 < t["whole_bill_saved_ratio"] < t["billed_saved_ratio"]
    (session,) = snapshot["sessions"].values()
    assert session["output_tokens"] == OUTPUT  # per session too
    assert f"output {OUTPUT} tokens, whole bill ~{t['whole_bill_in']:,.0f} -> " in line
    assert f"(-{t['whole_bill_saved_ratio']:.1%})" in line
    assert summary_lines(snapshot)[2].startswith(
        f"tokenlean: {OUTPUT} output tokens in 1 answers (0 reported none); whole bill "
        f"~{t['whole_bill_in']:,.0f} -> ~{t['whole_bill_sent']:,.0f} token-equivalents "
        f"(-{t['whole_bill_saved_ratio']:.1%}"
    )
    samples = parse(httpx.get(proxy.url + "/metrics").text)
    one = {name: value for (name, labels), value in samples.items() if ("api", api) in labels}
    assert one["tokenlean_output_tokens_total"] == OUTPUT
    assert one["tokenlean_output_unknown_total"] == 0
    assert one["tokenlean_upstream_cached_tokens_total"] == CACHED
    assert one["tokenlean_whole_bill_in_total"] == pytest.approx(t["whole_bill_in"], abs=0.06)
    assert one["tokenlean_whole_bill_sent_total"] == pytest.approx(t["whole_bill_sent"], abs=0.06)
    gauge = one["tokenlean_estimated_whole_bill_saving_ratio"]
    assert gauge == pytest.approx(t["whole_bill_saved_ratio"], abs=1e-4)


def test_a_chat_stream_without_usage_has_its_output_unknown(
    make_proxy: ProxyFactory,
    with_usage: FakeUpstream,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
):
    """OpenAI sends a streamed chat's usage only when the client asked for it; the proxy does
    not ask for it on the client's behalf, nor guess: that answer is left out of the whole bill
    and counted as unknown."""
    proxy = make_proxy("default", upstream=with_usage.url, originals_dir=tmp_path)
    with caplog.at_level(logging.INFO, logger="tokenlean.proxy"):
        assert _chat(proxy.url, stream=True, include_usage=False, session="a") == ANSWER
        assert _chat(proxy.url, stream=False, session="b") == ANSWER
        snapshot = _counted(proxy, 2)
        lines = _logged(caplog, 2)
    assert "stream_options" not in with_usage.requests[0].json()  # the request as sent
    t = snapshot["total"]
    assert (t["output_tokens"], t["output_unknown"]) == (OUTPUT, 1)
    unknown, known = sorted(snapshot["sessions"].values(), key=lambda s: -s["output_unknown"])
    assert (unknown["output_unknown"], unknown["whole_bill_in"], unknown["billed_in"] > 0) == (
        1,
        0,
        True,
    )
    assert t["whole_bill_in"] == known["whole_bill_in"]  # the unknown one's input left out
    assert known["whole_bill_in"] == pytest.approx(known["billed_in"] + 4 * OUTPUT, abs=0.11)
    assert lines[0].endswith("; output unknown (the answer reported none)")
    assert f"output {OUTPUT} tokens" in lines[1]
    assert "in 1 answers (1 reported none)" in summary_lines(_counted(proxy, 2))[2]


def test_the_output_price_can_be_set(make_proxy: ProxyFactory, with_usage: FakeUpstream):
    proxy = make_proxy(upstream=with_usage.url, output_price=0.5)
    assert _anthropic(proxy.url, stream=False) == ANSWER
    t = _counted(proxy)["total"]
    assert t["whole_bill_in"] == pytest.approx(t["billed_in"] + 0.5 * OUTPUT, abs=0.11)


GARBAGE: dict[str, tuple[str, bytes]] = {
    "a usage that is no count": (
        "application/json",
        json.dumps(fake.anthropic_message(ANSWER, usage={"output_tokens": "many"})).encode(),
    ),
    "JSON cut short": ("application/json", b'{"id": "msg", "usage": {"output_tokens": 3'),
    "events that are no JSON": (
        "text/event-stream",
        b'event: message_delta\ndata: {"usage": {output_tokens: 3}}\n\n\xff\xfe\n',
    ),
    "gzip that is not": ("application/json", b"\x1f\x8b not gzip at all"),
}


@pytest.mark.parametrize("case", GARBAGE)
def test_garbage_usage_passes_byte_for_byte_with_output_unknown(
    make_proxy: ProxyFactory, case: str
):
    kind, answer = GARBAGE[case]
    headers = [("content-type", kind)]
    if case.startswith("gzip"):
        headers.append(("content-encoding", "gzip"))
    with FakeUpstream(script=lambda r: Reply(200, answer, headers)) as upstream:
        proxy = make_proxy(upstream=upstream.url)
        request = body("anthropic", TRANSCRIPT, model="claude-test")
        with httpx.stream("POST", proxy.url + "/v1/messages", json=request) as reply:
            got = b"".join(reply.iter_raw())
        assert got == answer
        snapshot = _counted(proxy)
    t = snapshot["total"]
    assert (t["output_tokens"], t["output_unknown"], t["whole_bill_in"]) == (0, 1, 0)
    assert (
        summary_lines(snapshot)[2]
        == "tokenlean: no answer reported its output tokens: no whole bill"
    )


@pytest.mark.parametrize("stream", [False, True])
def test_a_compressed_answer_is_read_and_passes_as_compressed(
    make_proxy: ProxyFactory, stream: bool
):
    """Providers gzip their answers for clients that accept it; the proxy passes the bytes on
    compressed and reads the usage from their decoded form, one piece at a time."""
    if stream:
        events = fake.anthropic_events([{"type": "text", "text": ANSWER}], usage=USAGE["anthropic"])
        answer, kind = gzip.compress(b"".join(events)), "text/event-stream"
        chunks: Any = [answer[i : i + 7] for i in range(0, len(answer), 7)]
    else:
        message = fake.anthropic_message(ANSWER, usage=USAGE["anthropic"])
        answer, kind = gzip.compress(json.dumps(message).encode()), "application/json"
        chunks = answer
    headers = [("content-type", kind), ("content-encoding", "gzip")]
    with FakeUpstream(script=lambda r: Reply(200, chunks, headers)) as upstream:
        proxy = make_proxy(upstream=upstream.url)
        client = anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant", max_retries=0)
        request = body("anthropic", TRANSCRIPT, model="claude-test")
        if stream:
            with client.messages.stream(**request) as events:
                assert events.get_final_text() == ANSWER
        else:
            assert client.messages.create(**request).content[0].type == "text"
        t = _counted(proxy)["total"]
    assert (t["output_tokens"], t["upstream_cached_tokens"]) == (OUTPUT, CACHED)


def test_the_proxy_command_takes_an_output_price_and_sums_the_whole_bill_when_stopped(
    tmp_path: Path,
):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    named = {"x-tokenlean-session": "mine"}
    with FakeUpstream(script=answers_with_usage) as upstream:
        command = [sys.executable, "-m", "tokenlean.cli", "proxy", "--port", str(port)]
        command += ["--upstream", upstream.url, "--originals", str(tmp_path)]
        process = subprocess.Popen([*command, "--output-price", "2"], stderr=subprocess.PIPE)
        try:
            assert wait_for(lambda: _answered(url, named), timeout=30)
            assert wait_for(lambda: _mine(url, named)["requests"] == 1)
            t = _mine(url, named)
            process.send_signal(signal.SIGINT)
            err = process.communicate(timeout=30)[1].decode()
        finally:
            process.kill()
    assert process.returncode == 0
    assert t["whole_bill_in"] == pytest.approx(t["billed_in"] + 2 * OUTPUT, abs=0.11)
    assert f"output {OUTPUT} tokens, whole bill ~{t['whole_bill_in']:,.0f} -> " in err
    assert f"tokenlean: {OUTPUT} output tokens in 1 answers (0 reported none); whole bill" in err


def _mine(url: str, headers: dict[str, str]) -> dict[str, Any]:
    """The totals of the session ``headers`` name, from the proxy's ``GET /tokenlean/stats``."""
    total: dict[str, Any] = httpx.get(url + "/tokenlean/stats", headers=headers).json()["total"]
    return total


def _answered(url: str, headers: dict[str, str]) -> bool:
    """Whether the proxy at ``url`` answered one request (False while it is starting)."""
    try:
        request = body("anthropic", TRANSCRIPT, model="claude-test")
        return httpx.post(url + "/v1/messages", json=request, headers=headers).status_code == 200
    except httpx.ConnectError:
        return False


def test_a_negative_output_price_is_a_usage_error(capsys: pytest.CaptureFixture[str]):
    from tokenlean.cli import main

    assert main(["proxy", "--output-price", "-1"]) == 2
    assert "output_price must be a finite number >= 0, got -1.0" in capsys.readouterr().err
