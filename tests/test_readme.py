"""The README's runnable examples run as written."""

from __future__ import annotations

import re

from tests.data import ROOT


def _section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def test_the_testing_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", _section("Testing your own stack"), re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], "README.md", "exec"), {})  # raises if any of its asserts fails
