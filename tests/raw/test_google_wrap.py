"""``tokenlean.google.wrap``, driven with the real google-genai SDK over a real socket.

The recording fake provider (``tokenlean.testing.upstream``) runs on 127.0.0.1 and the SDK is
pointed at it with ``http_options``. Each test sends the same request through a plain client
and a wrapped one and compares what arrived: the wrapped body is exactly the ``"gemini"``
rewrite of the plain one (the long ``functionResponse`` shortened, its error line kept) and
every other value is the plain one's, streamed and not, sync and async.
"""

from __future__ import annotations

import base64
import builtins
import copy
import gc
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tokenlean.google
from tokenlean.raw import RawSettings, rewrite_request
from tokenlean.raw import _genai as genai_hook
from tokenlean.testing.upstream import FakeUpstream

genai = pytest.importorskip("google.genai", reason="needs google-genai (the dev extra)")
types = pytest.importorskip("google.genai.types", reason="needs google-genai (the dev extra)")

ANSWER = "Hello from the fake upstream"
ERROR = "FAILED tests/test_x.py::test_y - AssertionError: 3 != 4"
LOG = "\n".join(
    [*(f"PASSED tests/test_mod{i}.py::test_case_{i} in 0.01s" for i in range(300)), ERROR]
)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
SIGNATURE = b"opaque-thought-signature"
RESULT = ("contents", 2, "parts", 0, "functionResponse", "response", "output")


def _contents() -> list[Any]:
    """A history as an agent keeps it: typed SDK objects and plain dicts mixed."""
    call = types.FunctionCall(name="run_shell", args={"cmd": "pytest -q"})
    return [
        types.Content(role="user", parts=[types.Part(text="Run the tests and fix what fails.")]),
        types.Content(
            role="model",
            parts=[
                types.Part(text="I should run the tests.", thought=True),
                types.Part(function_call=call, thought_signature=SIGNATURE),
            ],
        ),
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "run_shell", "response": {"output": LOG}}}],
        },
        types.Content(
            role="user",
            parts=[
                types.Part.from_bytes(data=PNG, mime_type="image/png"),
                types.Part(text="And this screenshot?"),
            ],
        ),
    ]


def _config() -> Any:
    shell = types.FunctionDeclaration(
        name="run_shell",
        description="Run a shell command.",
        parameters_json_schema={"type": "object", "properties": {"cmd": {"type": "string"}}},
    )
    return types.GenerateContentConfig(
        system_instruction="You are a coding agent.",
        tools=[types.Tool(function_declarations=[shell])],
        thinking_config=types.ThinkingConfig(include_thoughts=True),
    )


@pytest.fixture
def gemini() -> Iterator[FakeUpstream]:
    with FakeUpstream() as fake:
        yield fake


@pytest.fixture
def settings(tmp_path: Path) -> RawSettings:
    return RawSettings(originals_dir=tmp_path / "originals")


def _client(upstream: FakeUpstream) -> Any:
    options = types.HttpOptions(base_url=upstream.url)
    return genai.Client(api_key="test-key", http_options=options)


async def _generate(client: Any, contents: list[Any], *, aio: bool, stream: bool) -> str:
    """One request the way the caller picks: sync or ``client.aio``, streamed or not."""
    kwargs = {"model": "gemini-test", "contents": contents, "config": _config()}
    models = client.aio.models if aio else client.models
    if not stream:
        reply = models.generate_content(**kwargs)
        return str((await reply if aio else reply).text)
    if aio:
        return "".join([c.text or "" async for c in await models.generate_content_stream(**kwargs)])
    return "".join(c.text or "" for c in models.generate_content_stream(**kwargs))


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _last(upstream: FakeUpstream) -> dict[str, Any]:
    body: dict[str, Any] = upstream.requests[-1].json()
    return body


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "aio"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_the_long_result_is_shortened_and_the_rest_sent_as_given(
    gemini: FakeUpstream, settings: RawSettings, aio: bool, stream: bool
) -> None:
    plain = _client(gemini)
    wrapped = tokenlean.google.wrap(plain, settings=settings)
    assert isinstance(wrapped, genai.Client) and wrapped is not plain
    assert await _generate(plain, _contents(), aio=aio, stream=stream) == ANSWER
    as_given = _last(gemini)
    assert await _generate(wrapped, _contents(), aio=aio, stream=stream) == ANSWER
    sent = _last(gemini)
    method = "streamGenerateContent" if stream else "generateContent"
    assert gemini.requests[-1].path.endswith(f"/models/gemini-test:{method}")
    assert gemini.requests[-1].header("x-goog-api-key") == "test-key"

    shortened = _at(sent, RESULT)
    assert ERROR in shortened and len(shortened) < len(LOG) / 4
    (original,) = _originals(settings).glob("*.txt")
    assert original.read_text() == LOG and str(original) in shortened
    expected = rewrite_request("gemini", as_given, settings=settings)
    assert expected is not None and sent == expected.body
    restored = copy.deepcopy(sent)
    _at(restored, RESULT[:-1])[RESULT[-1]] = LOG
    assert restored == as_given  # thought parts and signatures, inline data, tools: as given
    model_parts = sent["contents"][1]["parts"]
    assert model_parts[0]["thought"] is True
    assert base64.urlsafe_b64decode(model_parts[1]["thoughtSignature"]) == SIGNATURE
    assert base64.urlsafe_b64decode(sent["contents"][3]["parts"][0]["inlineData"]["data"]) == PNG
    assert sent["systemInstruction"] == as_given["systemInstruction"]
    assert sent["tools"] == as_given["tools"] and sent["tools"]


def _originals(settings: RawSettings) -> Path:
    assert settings.originals_dir is not None
    return settings.originals_dir


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "aio"])
async def test_the_next_call_resends_the_first_byte_for_byte(
    gemini: FakeUpstream, settings: RawSettings, aio: bool
) -> None:
    client = tokenlean.google.wrap(_client(gemini), settings=settings)
    history = _contents()
    await _generate(client, history, aio=aio, stream=False)
    first = [json.dumps(c) for c in _last(gemini)["contents"]]
    history += [
        types.Content(role="model", parts=[types.Part(text="test_y fails: 3 != 4.")]),
        {"role": "user", "parts": [{"text": "Fix it."}]},
    ]
    await _generate(client, history, aio=aio, stream=True)
    second = [json.dumps(c) for c in _last(gemini)["contents"]]
    assert len(second) == len(first) + 2 and second[: len(first)] == first


async def test_a_failing_rewrite_sends_the_request_as_given(
    gemini: FakeUpstream,
    settings: RawSettings,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    plain = _client(gemini)
    await _generate(plain, _contents(), aio=False, stream=False)
    as_given = _last(gemini)
    monkeypatch.setattr(genai_hook, "rewrite_request", broken)
    wrapped = tokenlean.google.wrap(plain, settings=settings)
    with caplog.at_level(logging.ERROR, logger="tokenlean.raw"):
        for aio in (False, True):
            for stream in (False, True):
                assert await _generate(wrapped, _contents(), aio=aio, stream=stream) == ANSWER
                assert _last(gemini) == as_given
    assert caplog.text.count("sent unchanged") == 4 and "boom" in caplog.text


def test_other_requests_are_not_rewritten(gemini: FakeUpstream, settings: RawSettings) -> None:
    client = tokenlean.google.wrap(_client(gemini), settings=settings)
    with pytest.raises(genai.errors.ClientError):  # the fake provider does not count tokens
        client.models.count_tokens(model="gemini-test", contents=_contents())
    assert gemini.requests[-1].path.endswith(":countTokens")
    assert _at(_last(gemini), RESULT) == LOG
    assert genai_hook.is_generate_path("models/m:streamGenerateContent?alt=sse")
    assert genai_hook.is_generate_path("projects/p/locations/l/models/m:generateContent")
    assert not genai_hook.is_generate_path("models/m:countTokens")


def test_the_original_client_is_left_as_it_was(gemini: FakeUpstream, settings: RawSettings) -> None:
    plain = _client(gemini)
    wrapped = tokenlean.google.wrap(plain, settings=settings)
    plain.models.generate_content(model="gemini-test", contents=_contents())
    assert _at(_last(gemini), RESULT) == LOG  # the caller's client still sends as it did
    del plain
    gc.collect()  # the copy holds the original: collecting neither closes the connections
    wrapped.models.generate_content(model="gemini-test", contents=_contents())
    assert _at(_last(gemini), RESULT) != LOG

    plain = _client(gemini)
    tokenlean.google.wrap(plain, settings=settings)  # a copy dropped at once
    gc.collect()
    assert plain.models.generate_content(model="gemini-test", contents="hi").text == ANSWER


async def test_wrapping_client_aio(gemini: FakeUpstream, settings: RawSettings) -> None:
    aio = tokenlean.google.wrap(_client(gemini).aio, settings=settings)
    await aio.models.generate_content(model="gemini-test", contents=_contents())
    assert ERROR in _at(_last(gemini), RESULT) != LOG


def test_wrap_checks_its_client(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="google-genai Client"):
        tokenlean.google.wrap(object())
    real_import = builtins.__import__

    def no_sdk(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("google.genai"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_sdk)
    with pytest.raises(ImportError, match=r"tokenlean\[google\]"):
        tokenlean.google.wrap(object())
