"""How ``tokenlean.litellm`` patches, on a stand-in ``litellm`` module: runs where LiteLLM is not
installed (``test_litellm_sdk.py`` drives the real SDK and mini-swe-agent)."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import tokenlean.litellm
from tests.data import ERROR, LOG
from tokenlean.raw import RawSettings, rewrite_call

CALL = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
HISTORY: Any = [
    {"role": "user", "content": "run the tests"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": LOG},
]


class FakeLitellm(ModuleType):
    """``completion`` and ``acompletion`` that record what they were called with."""

    def __init__(self) -> None:
        super().__init__("litellm")
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

        def completion(*args: Any, **kwargs: Any) -> str:
            self.calls.append((args, kwargs))
            return "sync"

        async def acompletion(*args: Any, **kwargs: Any) -> str:
            self.calls.append((args, kwargs))
            return "async"

        self.completion = completion
        self.acompletion = acompletion


@pytest.fixture
def litellm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLitellm]:
    module = FakeLitellm()
    monkeypatch.setitem(sys.modules, "litellm", module)
    yield module
    tokenlean.litellm.disable()


def _shortened(folder: Path) -> list[Any]:
    out = rewrite_call("completion", {"messages": HISTORY}, RawSettings(originals_dir=folder))
    assert out is not None
    return list(out["messages"])


def test_sync_async_and_positional_calls_get_the_gateway_rewrite(
    litellm: FakeLitellm, tmp_path: Path
):
    settings = tokenlean.litellm.enable(originals_dir=tmp_path)
    assert settings.originals_dir == tmp_path
    assert litellm.completion(model="m", messages=HISTORY, stream=True) == "sync"
    assert litellm.completion("m", HISTORY, temperature=0) == "sync"
    assert asyncio.run(litellm.acompletion(model="m", messages=HISTORY)) == "async"
    expected = _shortened(tmp_path)
    assert ERROR in expected[2]["content"] and expected[2]["content"] != LOG
    (_, by_name), (positional, rest), (_, awaited) = litellm.calls
    assert by_name == {"model": "m", "messages": expected, "stream": True}
    assert positional == ("m", expected) and rest == {"temperature": 0}
    assert awaited == {"model": "m", "messages": expected}


def test_enabling_twice_wraps_once_and_disable_restores_the_functions(
    litellm: FakeLitellm, tmp_path: Path
):
    own = litellm.completion, litellm.acompletion
    tokenlean.litellm.enable(originals_dir=tmp_path)
    wrapped = litellm.completion, litellm.acompletion
    tokenlean.litellm.enable(originals_dir=tmp_path / "other")
    assert (litellm.completion, litellm.acompletion) == wrapped
    assert litellm.completion.__wrapped__ is own[0]  # type: ignore[attr-defined]
    tokenlean.litellm.disable()
    assert litellm.completion is own[0] and litellm.acompletion is own[1]
    tokenlean.litellm.disable()  # not enabled: nothing to do
    wrapped[0](model="m", messages=HISTORY)  # a wrapper kept from before passes calls on
    assert litellm.calls[-1][1]["messages"] is HISTORY


def test_the_context_manager_leaves_things_as_it_found_them(litellm: FakeLitellm, tmp_path: Path):
    own = litellm.completion
    with tokenlean.litellm.enabled(originals_dir=tmp_path) as settings:
        assert litellm.completion is not own and settings.originals_dir == tmp_path
    assert litellm.completion is own
    outer = tokenlean.litellm.enable(originals_dir=tmp_path / "outer")
    with tokenlean.litellm.enabled(originals_dir=tmp_path / "inner"):
        pass
    litellm.completion(model="m", messages=HISTORY)  # still enabled, with the outer folder
    assert litellm.calls[-1][1]["messages"] == _shortened(tmp_path / "outer")
    assert outer.originals_dir == tmp_path / "outer"


def test_failures_and_messages_it_cannot_read_go_through_unchanged(
    litellm: FakeLitellm,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
):
    tokenlean.litellm.enable(originals_dir=tmp_path)
    odd: list[Any] = ["not a message", {"role": "mystery", "content": LOG}]
    litellm.completion(model="m", messages=odd)
    litellm.completion(model="m", messages="a prompt, not a list")
    assert litellm.calls[0][1]["messages"] is odd
    assert litellm.calls[1][1]["messages"] == "a prompt, not a list"

    def broken(*args: Any) -> None:
        raise RuntimeError("translation failed")

    monkeypatch.setattr(tokenlean.litellm, "rewrite_call", broken)
    with caplog.at_level(logging.WARNING, logger="tokenlean"):
        litellm.completion("m", HISTORY, temperature=0)
    assert litellm.calls[-1] == (("m", HISTORY), {"temperature": 0})
    assert "litellm.completion" in caplog.text and "translation failed" in caplog.text


def test_a_wrapper_someone_put_over_ours_stays(
    litellm: FakeLitellm, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    tokenlean.litellm.enable(originals_dir=tmp_path)
    ours = litellm.completion

    def theirs(*args: Any, **kwargs: Any) -> Any:
        return ours(*args, **kwargs)

    litellm.completion = theirs
    with caplog.at_level(logging.WARNING, logger="tokenlean"):
        tokenlean.litellm.disable()
    assert litellm.completion is theirs and "replaced after enable" in caplog.text
    theirs(model="m", messages=HISTORY)  # ours, now disabled, passes the call on
    assert litellm.calls[-1][1]["messages"] is HISTORY


def test_without_litellm_enable_names_the_extra(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "litellm", None)  # what an import of a missing module does
    with pytest.raises(ImportError, match=r"tokenlean\[litellm-sdk\]") as raised:
        tokenlean.litellm.enable()
    assert raised.value.name == "litellm"


def test_originals_dir_or_settings_not_both(tmp_path: Path):
    with pytest.raises(ValueError, match="not both"):
        tokenlean.litellm.enable(originals_dir=tmp_path, settings=RawSettings())
