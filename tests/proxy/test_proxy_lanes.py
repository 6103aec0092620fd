"""Which rewrites run on the event loop: a small body that brings little new (its history is a
memo hit), never a large one, a compressed one, or one with much new text; either way the body
forwarded is the one :func:`prepare` gives."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from tests.data import pytest_history
from tokenlean.proxy import ProxySettings, create_app
from tokenlean.proxy._rewrite import (
    INLINE_BODY_BYTES,
    INLINE_NEW_CHARS,
    Prepared,
    begin,
    default_rewriter,
    prepare,
)
from tokenlean.proxy._scan import RECENT


def _history(name: str, results: int) -> list[dict[str, Any]]:
    return pytest_history(results, f"{name}: fix the tests")


def _raw(messages: list[dict[str, Any]]) -> bytes:
    return json.dumps({"model": "m", "max_tokens": 10, "messages": messages}).encode()


def _forwarded(done: Prepared | Any) -> bytes:
    return (done if isinstance(done, Prepared) else done(lambda: False)).content


def test_a_re_sent_small_history_is_rewritten_at_once_as_prepare_would(tmp_path: Path):
    RECENT.clear()
    rewriter = default_rewriter(tmp_path / "originals")
    raw = _raw(_history("small", 2))
    assert len(raw) < INLINE_BODY_BYTES
    cold = begin(rewriter, "anthropic", raw, encoding=None, limit=2**24)
    assert not isinstance(cold, Prepared)  # all of it is new: to a thread
    first = _forwarded(cold)
    again = begin(rewriter, "anthropic", raw, encoding=None, limit=2**24)
    assert isinstance(again, Prepared) and again.outcome is not None
    assert again.content == first == prepare(rewriter, "anthropic", raw).content
    assert len(first) < len(raw)  # the logs were shortened


def test_little_new_stays_on_the_loop_much_new_does_not(tmp_path: Path):
    RECENT.clear()
    rewriter = default_rewriter(tmp_path / "originals")
    history = _history("growing", 2)
    _forwarded(begin(rewriter, "anthropic", _raw(history), encoding=None, limit=2**24))
    small = [*history, {"role": "assistant", "content": "done"}]
    assert isinstance(
        begin(rewriter, "anthropic", _raw(small), encoding=None, limit=2**24), Prepared
    )
    large = _history("growing", 3)
    assert len(json.dumps(large[-1])) > INLINE_NEW_CHARS
    later = begin(rewriter, "anthropic", _raw(large), encoding=None, limit=2**24)
    assert not isinstance(later, Prepared)
    assert _forwarded(later) == prepare(rewriter, "anthropic", _raw(large)).content


def test_a_compressed_or_large_body_always_goes_to_a_thread(tmp_path: Path):
    RECENT.clear()
    rewriter = default_rewriter(tmp_path / "originals")
    raw = _raw(_history("zipped", 1))
    _forwarded(begin(rewriter, "anthropic", raw, encoding=None, limit=2**24))
    zipped = begin(rewriter, "anthropic", gzip.compress(raw), encoding="gzip", limit=2**24)
    assert not isinstance(zipped, Prepared)
    big = _raw([*_history("big", 1), {"role": "user", "content": "x" * INLINE_BODY_BYTES}])
    _forwarded(begin(rewriter, "anthropic", big, encoding=None, limit=2**24))
    assert not isinstance(begin(rewriter, "anthropic", big, encoding=None, limit=2**24), Prepared)


def test_only_tokenlean_s_own_rewriter_with_a_folder_runs_on_the_loop(tmp_path: Path):
    """As the command builds it (``default_rewriter``), or by default; an embedder's rewriter
    might wait on anything, so it always runs on a thread."""
    settings = ProxySettings(originals_dir=tmp_path)
    assert create_app(settings).state.inline_rewrites
    own = default_rewriter(tmp_path)
    assert create_app(settings, rewriter=own).state.inline_rewrites
    embedded = create_app(settings, rewriter=lambda api, body: own(api, body))
    assert not embedded.state.inline_rewrites
    assert not create_app(settings, rewriter=None).state.inline_rewrites
