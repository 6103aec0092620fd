"""Where the tests find tokenlean's shared data, and how they skip when it is not there.

The shared folder (``../shared`` beside the checkout, or ``$TOKENLEAN_SHARED``) holds real agent
trajectories, real tool outputs and the tokenizer vocabularies. CI has it; a user's clone may
not, and then every test that needs it is skipped with a reason saying so.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOKENLEAN_SHARED", ROOT.parent / "shared"))
TRAJECTORIES = SHARED / "data" / "trajectories"
TOOL_OUTPUTS = SHARED / "data" / "tool_outputs"
#: Coding agents' own session files, unconverted (``native/claude_code``, ``native/codex``).
NATIVE = SHARED / "data" / "native"
TOKENIZERS = SHARED / "tokenizers"
BUNDLED = ROOT / "src" / "tokenlean" / "replay" / "data"

HAVE_SHARED = (TRAJECTORIES / "index.jsonl").is_file()
HAVE_VOCAB = (TOKENIZERS / "o200k_base.tiktoken").is_file()
_WHY = f"needs tokenlean's shared data folder at {SHARED} (absent in a bare clone)"

#: Mark a test (or a module, as ``pytestmark``) that reads the shared data.
needs_shared = pytest.mark.skipif(not HAVE_SHARED, reason=_WHY)
needs_shared_now = pytest.mark.skip(reason=_WHY)
#: Mark a test that needs the o200k_base vocabulary for exact counts.
needs_vocab = pytest.mark.skipif(not HAVE_VOCAB, reason=_WHY + " (tokenizers)")
#: Mark a test that needs the cl100k_base vocabulary.
needs_cl100k = pytest.mark.skipif(
    not (TOKENIZERS / "cl100k_base.tiktoken").is_file(), reason=_WHY + " (tokenizers)"
)


def real_trajectory(name: str) -> Path:
    """A real trajectory by its name under ``data/trajectories``: the copy shipped with the
    package when there is one (so the test runs in a bare clone), else the shared data's."""
    shipped = BUNDLED / name
    return shipped if shipped.is_file() else TRAJECTORIES / name


def skip_unless_here(path: Path) -> None:
    """Skip the calling test when ``path`` (a file of the shared data) is absent."""
    if not path.is_file():
        pytest.skip(f"{_WHY}: {path.name} is not there")


def shared_params(paths: list[Path]) -> list[Any]:
    """Parameters for a test run once per shared file: ``paths``, or one skipped placeholder
    saying why when the shared data is absent (not pytest's bare "empty parameter set")."""
    return list(paths) or [pytest.param(None, marks=needs_shared_now, id="no-shared-data")]


def trajectory_paths() -> list[Path]:
    """Every real trajectory in the shared data (none without it: the tests then skip)."""
    return sorted(TRAJECTORIES.glob("*/*.json")) if HAVE_SHARED else []


def bundled_paths() -> list[Path]:
    """The real trajectories shipped with the package (always there)."""
    return sorted(BUNDLED.glob("*/*.json"))


def one_run_per_source() -> list[Path]:
    """The bundled SWE-agent run (there in a bare clone), then the first run of each shared
    source: what an adapter's cache-safety replay walks through."""
    paths = [real_trajectory("sweagent/demo__ctf_web__i_got_id_demo.json")]
    if HAVE_SHARED:
        paths += [
            next(iter(sorted(d.glob("*.json"))))
            for d in sorted(TRAJECTORIES.iterdir())
            if d.is_dir() and any(d.glob("*.json"))
        ]
    return paths


# -- what the adapters' tests shorten: a pytest log with one failure, and a long script ---------

ERROR = "FAILED tests/test_api.py::test_refund - AssertionError: expected 200, got 500"
LOG = "\n".join(
    [f"tests/test_api.py::test_case_{i} PASSED [{i // 4}%]" for i in range(200)]
    + [ERROR]
    + [f"tests/test_api.py::test_case_{i} PASSED [{i // 4}%]" for i in range(200, 399)]
)
#: A Chat Completions history whose tool result is :data:`LOG`, and its tool schema: what the
#: LiteLLM plug-in's test and the in-process LiteLLM test send.
CHAT_TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
        },
    }
]
CHAT_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "bash", "arguments": json.dumps({"cmd": "pytest"})},
}
CHAT_HISTORY: Any = [
    {"role": "user", "content": "run the tests"},
    {"role": "assistant", "content": None, "tool_calls": [CHAT_CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": LOG},
]
SCRIPT = "\n".join(
    ["python - <<'EOF'", *(f"print('step {i}', {i} * {i})" for i in range(150)), "EOF"]
)


#: A long passing pytest log: what the Anthropic histories below answer each call with.
PASSING_LOG = "\n".join(f"tests/test_{n}.py::test_case PASSED [{n}%]" for n in range(400))


def pytest_history(results: int, task: str = "fix the tests") -> list[dict[str, Any]]:
    """Anthropic Messages: ``task``, then ``results`` turns of a Bash ``pytest`` call answered
    with :data:`PASSING_LOG` (each numbered, so none repeats an earlier one)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for n in range(results):
        call = {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "pytest"}}
        result = {
            "type": "tool_result",
            "tool_use_id": f"t{n}",
            "content": f"run {n}\n{PASSING_LOG}",
        }
        messages += [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
    return messages
