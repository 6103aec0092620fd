"""The README's AgentScope recipe runs as written."""

from __future__ import annotations

import re
from typing import Any

from tests.agentscope.support import ask, results
from tests.data import ERROR, LOG, ROOT
from tokenlean.testing.agentscope import RecordedTool, ScriptedChatModel, turn


def test_the_readme_recipe_runs() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", text[text.index("### AgentScope") :], re.S)
    assert block is not None
    model = ScriptedChatModel([turn(calls=[("c1", "bash", {"cmd": "pytest"})]), turn("done")])
    names: dict[str, Any] = {"model": model, "tools": [RecordedTool("bash", [LOG])]}
    exec(compile(block[1], "README.md", "exec"), names)
    assert ask(names["agent"]).get_text_content() == "done"
    (seen,) = results(model.calls[1])
    assert ERROR in seen and len(seen) < len(LOG) / 5
