"""What a call asked for: a file printed as it is, a stretch of one, or something else."""

from __future__ import annotations

from typing import Any

import pytest

from tokenlean import shorten
from tokenlean.shorten._detect import file_read, runs_own_script


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"command": ["bash", "-lc", "sed -n '1,200p' specs/003/spec.md"]}, "range"),
        ({"command": ["bash", "-lc", "nl -ba specs/x.md | sed -n '1,220p'"]}, "range"),
        ({"command": "head -n 80 specs/tasks.md"}, "range"),
        ({"command": "cd /repo && tail -n 120 build.log 2>/dev/null"}, "range"),
        ({"command": "cat specs/001/spec.md"}, "file"),
        ({"cmd": "cat a.py; cat b.py"}, "file"),
        (
            {"command": ["powershell.exe", "-NoProfile", "-Command", "Get-Content README.md"]},
            "file",
        ),
        ("cat notes.txt", "file"),
        # Codex's code mode: the command is a string inside the custom tool's code
        (
            {"input": 'text(await tools.exec_command({cmd:"cat r.md",max_output_tokens:4000}));'},
            "file",
        ),
        ({"input": 'text(await tools.exec_command({"cmd": "sed -n \'1,80p\' a.py"}));'}, "range"),
        ({"input": 'a({cmd: "ls"}); b({cmd: "cat x.md"})'}, None),  # two commands: not one read
        ({"input": "*** Begin Patch\n*** End Patch"}, None),
        ({"path": "docs/guide.md"}, "file"),  # a file tool (MCP read_file, Pi's read)
        ({"filePath": "/src/app.tsx", "offset": 40, "limit": 80}, "range"),
        ({"path": "src/"}, None),  # a folder is listed, not read
        ({"file_path": "a.py", "old_string": "x", "new_string": "y"}, None),  # an edit
        ({"path": "a.md", "pattern": "TODO"}, None),  # a search
        ({"command": "cat f | grep x"}, None),
        ({"command": "cat <<'EOF' > f.py\nprint(1)\nEOF"}, None),
        ({"command": "sed -i 's/a/b/' f.py"}, None),
        ({"command": "rg -n codex"}, None),
        ({"command": "git status"}, None),
        ({"command": "cat"}, None),
        ({"command": "cat 'unbalanced"}, None),
        ({"command": "cat " + "x" * 500}, None),  # too long to be a plain read
        (None, None),
        ({"command": 7}, None),
    ],
)
def test_file_read(query: Any, expected: str | None) -> None:
    assert file_read(query) == expected


def test_a_command_given_as_a_list_of_words_is_read_as_one() -> None:
    assert runs_own_script({"command": ["bash", "-lc", "python reproduce.py"]})
    assert not runs_own_script({"command": ["bash", "-lc", "pytest -q"]})


DOC = "\n".join(
    f"- **FR-{i:03d}**: The service MUST record the queue and volume of run {i} for audits."
    for i in range(1, 200)
)
BODY = [f"    step_{k} = transform(request, stage={k}, retries=3)" for k in range(12)]
CODE = "\n".join(
    line
    for i in range(60)
    for line in (f"def handler_{i}(request):", *BODY, "    return step_11", "")
)


def test_a_document_the_agent_printed_stays_whole_and_one_it_searched_is_cut() -> None:
    assert shorten(DOC, query={"command": "cat specs/spec.md"}).text == DOC
    assert shorten(DOC, query={"command": "sed -n '1,400p' specs/spec.md"}).text == DOC
    assert shorten(DOC, query={"command": "grep -n MUST specs/spec.md"}).changed


def test_source_printed_whole_keeps_its_outline_and_a_stretch_of_it_stays_whole() -> None:
    whole = shorten(CODE, query={"command": "cat app/handlers.py"}, max_tokens=200)
    assert whole.changed and whole.kind == "code"
    assert all(f"def handler_{i}(request):" in whole.text for i in range(60))
    assert shorten(CODE, query={"command": "sed -n '1,240p' app/handlers.py"}).text == CODE
