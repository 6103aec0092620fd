"""Reading an answer's usage as it passes: however the bytes are cut into chunks, compressed
or not, with bounded memory, and never raising."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenlean.proxy import _usage
from tokenlean.proxy._usage import Usage, answer_reader
from tokenlean.testing import upstream as fake

from .test_proxy_output import ANSWER, CACHED, OUTPUT, PROMPT, USAGE

EVENTS = {
    "anthropic": fake.anthropic_events(
        [{"type": "text", "text": ANSWER}], usage=USAGE["anthropic"]
    ),
    "openai_chat": fake.chat_events(ANSWER, usage=USAGE["openai_chat"]),
    "openai_responses": fake.response_events(ANSWER, usage=USAGE["openai_responses"]),
    "gemini": fake.gemini_events(ANSWER, usage=USAGE["gemini"]),
}
SSE = {"content-type": "text/event-stream"}
EXPECTED = Usage(OUTPUT, PROMPT, CACHED)
#: Anthropic's answer also says how many prompt tokens it wrote to the cache.
WRITTEN = {"anthropic": Usage(OUTPUT, PROMPT, CACHED, 20)}


def _read(api: str, chunks: list[bytes], headers: dict[str, str]) -> Usage | None:
    reader = answer_reader(api, 200, headers)  # type: ignore[arg-type]
    assert reader is not None
    for chunk in chunks:
        reader.feed(chunk)
    return reader.usage()


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@settings(max_examples=40, deadline=None)
@given(
    api=st.sampled_from(sorted(EVENTS)),
    cuts=st.lists(st.integers(min_value=0), max_size=30),
    coding=st.sampled_from(["identity", "gzip", "deflate"]),
    crlf=st.booleans(),
)
def test_any_cut_of_a_stream_reads_the_same_usage(
    api: str, cuts: list[int], coding: str, crlf: bool
):
    data = b"".join(EVENTS[api])
    if crlf:  # SSE allows CRLF line ends
        data = data.replace(b"\n", b"\r\n")
    if coding == "gzip":
        data = gzip.compress(data)
    elif coding == "deflate":
        data = zlib.compress(data)
    expected = WRITTEN.get(api, EXPECTED)
    assert _read(api, _cut(data, cuts), {**SSE, "content-encoding": coding}) == expected


def test_a_gemini_stream_without_sse_is_one_json_array():
    chunks = [json.loads(e.removeprefix(b"data: ")) for e in EVENTS["gemini"]]
    data = json.dumps(chunks).encode()
    assert _read("gemini", _cut(data, [5, 50]), {"content-type": "application/json"}) == EXPECTED


def test_an_event_too_long_to_keep_is_skipped_and_the_next_one_read(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(_usage, "MAX_KEPT", 100)
    huge = fake.sse_event({"type": "ping", "usage": {"output_tokens": 1}, "pad": "x" * 500})
    final = fake.sse_event({"type": "message_delta", "usage": {"output_tokens": 7}})
    assert _read("anthropic", [huge[:300], huge[300:], final], SSE) == Usage(7)
    assert _read("anthropic", [huge], SSE) is None


def test_a_json_answer_too_long_to_keep_is_unknown(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(_usage, "MAX_KEPT", 100)
    data = json.dumps(fake.anthropic_message("x" * 200, usage=USAGE["anthropic"])).encode()
    assert _read("anthropic", [data], {"content-type": "application/json"}) is None


def test_a_compression_bomb_stops_the_reading(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(_usage, "MAX_DECODED", 1_000_000)
    bomb = gzip.compress(b"data: " + b"0" * 5_000_000 + b"\n")
    final = b"".join(EVENTS["anthropic"])
    reader = answer_reader("anthropic", 200, {**SSE, "content-encoding": "gzip"})
    assert reader is not None
    reader.feed(bomb)
    reader.feed(gzip.compress(final))
    assert reader.usage() is None


@pytest.mark.parametrize(
    ("status", "headers"),
    [
        (429, {"content-type": "application/json"}),
        (200, {"content-type": "text/html"}),
        (200, {"content-type": "application/json", "content-encoding": "br, gzip"}),
    ],
)
def test_answers_not_read(status: int, headers: dict[str, str]):
    assert answer_reader("anthropic", status, headers) is None
