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


def test_every_install_line_installs_what_exists() -> None:
    """tokenlean is not on PyPI: a shell line that installs it names a clone or a built wheel
    (`.`, `./`, `dist/`), never the bare name (`pip install 'tokenlean[proxy]'` failed)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    lines = [line for block in blocks for line in block.splitlines()]
    installs = [line.split("#")[0].strip() for line in lines if "pip install" in line]
    assert installs
    local = re.compile(r"""pip install (-e )?['"]?(\.|\$\(echo dist/)""")
    for line in installs:
        assert local.search(line), line
