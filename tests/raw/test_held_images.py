"""The memos that keep a body's messages alive (a frozen body's objects, another body's content)
are charged for everything those messages hold: a flood of bodies carrying images (screenshots)
stays within their bounds in bytes."""

from __future__ import annotations

import base64
import gc
import os
import tracemalloc
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

import tokenlean.raw as raw
from tokenlean import _checkpoints
from tokenlean.raw import RawSettings, _anthropic, _reading, _reuse, frozen_bodies, rewrite_request

MB = 2**20


def _body(n: int, image: str) -> dict[str, Any]:
    picture = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": image},
    }
    call = {"type": "tool_use", "id": f"t{n}", "name": "Screenshot", "input": {}}
    result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": [picture]}
    return {
        "model": "m",
        "max_tokens": 9,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": f"look {n}"}, picture]},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ],
    }


def _image() -> str:
    return base64.b64encode(os.urandom(3 * MB // 4)).decode()  # 1 MB of base64


def test_a_kept_message_and_list_are_charged_their_images():
    reads, lists = _reading._READS.size, _reading._LISTS.size
    with frozen_bodies():
        _anthropic.read(_body(0, _image()))
    assert _reading._READS.size - reads >= 2 * MB  # the first message and the result each
    assert _reading._LISTS.size - lists >= 2 * MB


@pytest.mark.parametrize("frozen", [True, False])
def test_bodies_with_images_read_one_after_another_are_not_all_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, frozen: bool
):
    memos = (
        (_reading._READS, _reading._LISTS, _reuse._PATCHED, _checkpoints._CHAINS, raw._OTHER)
        if frozen
        else (_reading._CONTENTS, _checkpoints._CHAINS, raw._OTHER_BY_CONTENT)
    )
    for memo in memos:
        monkeypatch.setattr(memo, "max_bytes", 4 * MB)
        memo.clear()
    settings = RawSettings(originals_dir=tmp_path / "originals")
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for n in range(40):
            with frozen_bodies() if frozen else nullcontext():
                rewrite_request("anthropic", _body(n, _image()), settings=settings)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert kept < 24 * MB  # 40 MB of images read; memos of 4 MB each, sharing their messages
