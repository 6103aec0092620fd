"""Where the tests find tokenlean's shared data, and how they skip when it is not there.

The shared folder (``../shared`` beside the checkout, or ``$TOKENLEAN_SHARED``) holds real agent
trajectories, real tool outputs and the tokenizer vocabularies. CI has it; a user's clone may
not, and then every test that needs it is skipped with a reason saying so.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOKENLEAN_SHARED", ROOT.parent / "shared"))
TRAJECTORIES = SHARED / "data" / "trajectories"
TOOL_OUTPUTS = SHARED / "data" / "tool_outputs"
TOKENIZERS = SHARED / "tokenizers"
BUNDLED = ROOT / "src" / "tokenlean" / "replay" / "data"

HAVE_SHARED = (TRAJECTORIES / "index.jsonl").is_file()
HAVE_VOCAB = (TOKENIZERS / "o200k_base.tiktoken").is_file()
_WHY = f"needs tokenlean's shared data folder at {SHARED} (absent in a bare clone)"

#: Mark a test (or a module, as ``pytestmark``) that reads the shared data.
needs_shared = pytest.mark.skipif(not HAVE_SHARED, reason=_WHY)
#: Mark a test that needs the o200k_base vocabulary for exact counts.
needs_vocab = pytest.mark.skipif(not HAVE_VOCAB, reason=_WHY + " (tokenizers)")


def trajectory_paths() -> list[Path]:
    """Every real trajectory in the shared data (none without it: the tests then skip)."""
    return sorted(TRAJECTORIES.glob("*/*.json")) if HAVE_SHARED else []


def bundled_paths() -> list[Path]:
    """The real trajectories shipped with the package (always there)."""
    return sorted(BUNDLED.glob("*/*.json"))
