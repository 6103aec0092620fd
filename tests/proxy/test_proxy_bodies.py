"""Every body is handled or passed through as the client's bytes: bodies it cannot read go
upstream as sent (with a log line and a count), compressed bodies are decoded, rewritten and
encoded again, and a rewritten body keeps the client's bytes wherever the rewrite changed nothing
(non-ASCII text included), within the size the client's body was accepted at."""

from __future__ import annotations

import copy
import gzip
import importlib.util
import json
import pickle
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest

from tokenlean.proxy import BackgroundProxy
from tokenlean.proxy._rewrite import default_rewriter, prepare
from tokenlean.proxy._scan import ScannedBody, compact, read_body
from tokenlean.testing.upstream import FakeUpstream, json_reply

from .proxy_support import MARKER, Outcome, ProxyFactory, marker_rewriter, wait_for

GENEROUS = 30.0
LOG = "".join(f"test_{i} PASSED in 0.0{i % 10}s — 通过\n" for i in range(300))
HAS_ZSTD = importlib.util.find_spec("zstandard") is not None
HAS_BROTLI = importlib.util.find_spec("brotli") is not None


def _post(url: str, content: bytes, **headers: str) -> httpx.Response:
    merged = {"content-type": "application/json", **headers}
    return httpx.post(url + "/v1/messages", content=content, headers=merged, timeout=GENEROUS)


def _unread(proxy: BackgroundProxy) -> dict[str, int]:
    # the proxy-wide counts: what GET /tokenlean/stats shows with the token (test_proxy_safety)
    return dict(proxy.app.state.stats.snapshot()["forwarded_unread"])


def _marked(extra: str = "") -> bytes:
    body = {"model": "m", "messages": [{"role": "user", "content": f"{MARKER} {extra}"}]}
    return json.dumps(body, ensure_ascii=False).encode()


# --- bodies that cannot be read ----------------------------------------------------------------


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def test_a_body_nested_5000_deep_goes_upstream_as_sent_with_a_log_line_and_a_count(
    make_proxy: ProxyFactory, upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
):
    body = _marked()[:-1] + b',"deep":' + _nested(5000) + b"}"
    proxy = make_proxy(rewriter=marker_rewriter())
    with caplog.at_level("WARNING", logger="tokenlean.proxy"):
        reply = _post(proxy.url, body)
    assert reply.status_code == 200
    assert upstream.requests[-1].body == body
    assert any("nested too deeply" in r.getMessage() for r in caplog.records)
    assert wait_for(lambda: _unread(proxy) == {"nested too deeply to read": 1})


def test_a_body_that_is_not_json_goes_upstream_as_sent_and_is_counted(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    proxy = make_proxy(rewriter=marker_rewriter())
    _post(proxy.url, b"not json " + MARKER.encode())
    assert upstream.requests[-1].body == b"not json " + MARKER.encode()
    assert wait_for(lambda: _unread(proxy) == {"not a JSON object": 1})


# --- compressed bodies -------------------------------------------------------------------------

Codec = tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]


def _zstd() -> Codec:
    import zstandard

    return zstandard.ZstdCompressor().compress, zstandard.ZstdDecompressor().decompress


CODECS: dict[str, Callable[[], Codec]] = {
    "gzip": lambda: (gzip.compress, gzip.decompress),
    "deflate": lambda: (zlib.compress, zlib.decompress),
    "zstd": _zstd,
}


@pytest.mark.parametrize(
    "coding",
    [
        "gzip",
        "deflate",
        pytest.param("zstd", marks=pytest.mark.skipif(not HAS_ZSTD, reason="needs zstandard")),
    ],
)
def test_a_compressed_body_is_decoded_rewritten_and_encoded_again(
    make_proxy: ProxyFactory, upstream: FakeUpstream, coding: str
):
    compress, decompress = CODECS[coding]()
    proxy = make_proxy(rewriter=marker_rewriter())
    reply = _post(proxy.url, compress(_marked()), **{"content-encoding": coding})
    assert reply.status_code == 200
    sent = upstream.requests[-1]
    assert sent.header("content-encoding") == coding
    assert json.loads(decompress(sent.body))["messages"][0]["content"] == MARKER.upper() + " "


def test_a_raw_deflate_body_is_answered_in_raw_deflate(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    squeeze = zlib.compressobj(wbits=-15)
    proxy = make_proxy(rewriter=marker_rewriter())
    _post(
        proxy.url, squeeze.compress(_marked()) + squeeze.flush(), **{"content-encoding": "deflate"}
    )
    sent = json.loads(zlib.decompress(upstream.requests[-1].body, -15))
    assert sent["messages"][0]["content"] == MARKER.upper() + " "


def test_a_compressed_body_nothing_changes_goes_as_sent(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    body = gzip.compress(b'{"model":"m","messages":[{"role":"user","content":"plain"}]}')
    proxy = make_proxy(rewriter=marker_rewriter())
    _post(proxy.url, body, **{"content-encoding": "gzip"})
    assert upstream.requests[-1].body == body


@pytest.mark.skipif(HAS_BROTLI, reason="brotli is installed: br bodies are read")
def test_a_br_body_without_brotli_goes_as_sent_with_a_log_line_and_a_count(
    make_proxy: ProxyFactory, upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
):
    body = b"\x1b\x03\x00\xf8\xa5\x01 not really brotli"
    proxy = make_proxy(rewriter=marker_rewriter())
    with caplog.at_level("WARNING", logger="tokenlean.proxy"):
        _post(proxy.url, body, **{"content-encoding": "br"})
    assert upstream.requests[-1].body == body
    assert any("content-encoding br" in r.getMessage() for r in caplog.records)
    assert wait_for(lambda: _unread(proxy) == {"content-encoding br": 1})


@pytest.mark.parametrize(
    ("coding", "body", "reason"),
    [
        ("gzip", gzip.compress(b" " * 20_000 + _marked()), "decoded body over 10,000 bytes"),
        ("gzip", gzip.compress(_marked())[:-9], "content-encoding gzip unreadable"),
        (
            "gzip, deflate",
            zlib.compress(gzip.compress(_marked())),
            "content-encoding gzip, deflate",
        ),
    ],
    ids=["inflates past the limit", "cut short", "stacked codings"],
)
def test_a_compressed_body_that_cannot_be_read_goes_as_sent(
    make_proxy: ProxyFactory, upstream: FakeUpstream, coding: str, body: bytes, reason: str
):
    proxy = make_proxy(rewriter=marker_rewriter(), max_body_bytes=10_000)
    _post(proxy.url, body, **{"content-encoding": coding})
    assert upstream.requests[-1].body == body
    assert wait_for(lambda: _unread(proxy) == {reason: 1})


# --- the client's bytes kept -------------------------------------------------------------------


def _conversation() -> tuple[str, list[Any]]:
    system = "You are a careful agent — 你是一个细心的助手。"
    messages: list[Any] = [
        {"role": "user", "content": "修复这个错误 — fix the bug"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t0", "name": "bash", "input": {"cmd": "ls"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t0", "content": LOG}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "pwd"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "/"}]},
    ]
    return system, messages


def _edited_span(data: bytes, index: int) -> tuple[int, int]:
    """Where message ``index`` lies in ``data``, in bytes."""
    scanned = read_body(data, "messages")
    assert isinstance(scanned, ScannedBody) and scanned.source is not None
    start, end = scanned.item_spans[index]
    return len(scanned.source[:start].encode()), len(scanned.source[:end].encode())


def test_the_sdks_bytes_around_the_edit_reach_the_upstream_unchanged(
    make_proxy: ProxyFactory, upstream: FakeUpstream, tmp_path: Path
):
    """The system prompt, the tools and every message but the shortened result are the client's
    exact bytes; non-ASCII text stays as sent (no ``\\u2014``), so nothing the provider has
    cached changes once the proxy is in the way."""
    system, messages = _conversation()
    upstream.script = lambda r: json_reply({"type": "message", "content": []})
    proxy = make_proxy(rewriter=default_rewriter(tmp_path))
    for base in (upstream.url, proxy.url):
        client = anthropic.Anthropic(base_url=base, api_key="k", max_retries=0)
        client.messages.with_raw_response.create(
            model="m", max_tokens=1, system=system, messages=messages
        )
    direct, proxied = (r.body for r in upstream.requests[-2:])
    assert "—".encode() in direct  # the SDK sends it as it is
    start, end = _edited_span(direct, 2)
    assert proxied != direct  # the long result was shortened
    assert proxied[:start] == direct[:start]
    assert proxied.endswith(direct[end:])
    assert b"\\u2014" not in proxied and len(proxied) < len(direct)


def test_a_rewritten_body_of_cjk_text_keeps_its_size(tmp_path: Path):
    """CJK text escaped as ``\\uXXXX`` takes six bytes a character instead of three: the
    re-serialised body doubled, past the size check the client's body had passed."""
    story = "长篇故事。" * 200_000  # 3 MB as UTF-8
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": story}, {"role": "user", "content": MARKER}],
    }
    raw = json.dumps(body, ensure_ascii=False).encode()
    prepared = prepare(marker_rewriter(), "anthropic", raw)
    assert prepared.outcome is not None
    assert len(prepared.content) <= len(raw)  # the edited message loses its spaces
    assert json.loads(prepared.content) == prepared.outcome.body


def test_untouched_values_keep_their_spacing_and_escapes(
    make_proxy: ProxyFactory, upstream: FakeUpstream
):
    head = b'{ "model" : "m",\n  "system": "caf\\u00e9 \\/ \\ud83d\\ude00",\n  "messages" : [ '
    kept = b'{"role": "user", "content": "fix \\u2014 it"}'
    body = head + kept + b' ,\n {"role":"user","content":"' + MARKER.encode() + b'"}\n ] }'
    proxy = make_proxy(rewriter=marker_rewriter())
    _post(proxy.url, body)
    sent = upstream.requests[-1].body
    assert sent == head + kept + b' ,\n {"role":"user","content":"TL-MARKER"}\n ] }'


def test_a_lone_surrogate_the_client_escaped_still_serialises(tmp_path: Path):
    raw = b'{"model":"m","messages":[{"role":"user","content":"\\ud800 ' + MARKER.encode() + b'"}]}'
    prepared = prepare(marker_rewriter(), "anthropic", raw)
    assert prepared.outcome is not None
    assert json.loads(prepared.content)["messages"][0]["content"] == "\ud800 TL-MARKER"


def _growing(body: Mapping[str, Any]) -> Any:
    grown = {**body, "messages": [{"role": "user", "content": "x" * 2_000}]}
    return Outcome(grown, 10, 10, results_shortened=1)


def test_a_rewritten_body_never_exceeds_the_size_the_clients_body_was_accepted_at(
    make_proxy: ProxyFactory, upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
):
    proxy = make_proxy(rewriter=lambda api, body: _growing(body), max_body_bytes=1_500)
    body = _marked("y" * 1_000)
    assert _post(proxy.url, body).status_code == 200
    assert upstream.requests[-1].body == body


# --- numbers ------------------------------------------------------------------------------------

#: Numbers whose text Python's floats and ints do not keep: out of range, exponents, a negative
#: zero, more digits than a double holds.
NUMBERS = (
    b'{"huge":1e400,"tiny":-1e-400,"exp":1E+2,"zero":-0,"fzero":-0.0,"long":0.10000000000000000555'
    b'11151231257827,"big":123456789012345678901234567890,"plain":1.5,"int":42}'
)


def _with_numbers(extra: bytes = b"") -> bytes:
    call = b'{"type":"tool_use","id":"t1","name":"f","input":' + NUMBERS + b"}"
    text = b'{"type":"text","text":"' + MARKER.encode() + b'"}'
    message = b'{"role":"assistant","content":[' + call + b"," + text + b"]}"
    return b'{"model":"m",' + extra + b'"messages":[' + message + b"]}"


def _refuse_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _added_key(api: Any, body: Mapping[str, Any]) -> Any:
    outcome = marker_rewriter()(api, body)
    assert outcome is not None
    return Outcome({**outcome.body, "metadata": {"n": body["max_tokens"]}}, 10, 10, 1)


def test_numbers_in_a_rewritten_value_keep_the_clients_text():
    """``1e400`` was sent on as ``Infinity`` (which no provider reads as JSON), and ``1E+2``,
    ``-0``, long decimals were written in other words."""
    raw = _with_numbers()
    prepared = prepare(marker_rewriter(), "anthropic", raw)
    assert prepared.outcome is not None
    assert prepared.content == raw.replace(MARKER.encode(), MARKER.upper().encode())
    assert prepared.body is not None  # a rewriter that copies or pickles keeps the texts too
    for copied in (
        copy.deepcopy(prepared.body.values),
        pickle.loads(pickle.dumps(prepared.body.values)),
    ):
        assert compact(copied).encode() == raw


def test_numbers_keep_their_text_when_the_whole_body_is_written_again():
    raw = _with_numbers(b'"max_tokens":1E+3,')
    prepared = prepare(_added_key, "anthropic", raw)
    assert prepared.outcome is not None
    assert prepared.content.startswith(
        _with_numbers(b'"max_tokens":1E+3,')
        .replace(MARKER.encode(), MARKER.upper().encode())
        .removesuffix(b"}")
    )
    assert prepared.content.endswith(b',"metadata":{"n":1E+3}}')
    sent = json.loads(prepared.content, parse_constant=_refuse_constants)  # valid JSON
    assert sent["metadata"] == {"n": 1000}
