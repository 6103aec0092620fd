"""Shared fixtures: exact counters (skipped without the vocabulary)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.data import HAVE_VOCAB, TOKENIZERS

if HAVE_VOCAB:
    os.environ.setdefault("TOKENLEAN_TIKTOKEN_DIR", str(TOKENIZERS))


@pytest.fixture(scope="session")
def o200k() -> Any:
    if not HAVE_VOCAB:
        pytest.skip(f"needs the o200k_base vocabulary in {TOKENIZERS} (absent in a bare clone)")
    from tokenlean.tokens import TiktokenCounter

    return TiktokenCounter("o200k_base", vocab_path=TOKENIZERS)
