"""What a call asked for: a file printed as it is, a stretch of one, or something else."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tokenlean import ShortenSettings, shorten
from tokenlean.shorten._calls import (
    asks_an_agent,
    fetches_a_record,
    runs_own_script,
    writes_by_line,
)
from tokenlean.shorten._reads import file_read, requested_lines


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
        ({"absolute_path": "/repo/docs/guide.md"}, "file"),  # gemini-cli's read_file, mid-2025
        ({"file_path": "/repo/a.py", "start_line": 5, "end_line": 40}, "range"),  # and now
        ({"command": "view", "path": "/repo/spec.md"}, "file"),  # a file editor's view
        ({"command": "view", "path": "/repo/a.py", "view_range": [40, 90]}, "range"),
        ({"command": "view", "path": "/repo/src"}, None),  # a folder's listing
        # newer OpenHands editors label every call's risk: the read is the same
        ({"command": "view", "path": "/repo/a.md", "security_risk": "LOW"}, "file"),
        ({"paths": ["README.md", "docs/*.md"]}, "file"),  # gemini-cli's read_many_files
        ({"include": ["src/**/*.ts"], "exclude": ["**/*.test.ts"], "recursive": True}, "file"),
        ({"include": "src/**/*.ts"}, None),  # not a list of paths
        ({"include": ["*.ts"], "pattern": "TODO"}, None),  # a search narrowed to some files
        ({"paths": []}, None),
        ({"command": "create", "path": "/repo/a.py", "file_text": "x = 1"}, None),
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


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"command": ["bash", "-lc", "sed -n '1,200p' specs/003/spec.md"]}, 200),
        ({"command": "sed -n '40,120p' a.py"}, 81),
        ({"command": "sed -n 7p a.py"}, 1),
        ({"command": ["bash", "-lc", "nl -ba a.py | sed -n '1,220p'"]}, 220),
        ({"command": "head -n 80 specs/tasks.md"}, 80),
        ({"command": "cd /repo && head -n80 a.py"}, 80),
        ({"command": "head -300 a.py"}, 300),
        ({"command": "tail --lines=25 a.log"}, 25),
        ({"command": "head a.py"}, 10),  # head's own count
        ({"command": "cat a.py | head -n 200"}, 200),
        # two stretches chosen one by one: a view of both, not a file read a page at a time
        ({"command": "sed -n '1,200p' a.py && sed -n '5,20p' b.py"}, None),
        ({"filePath": "/src/app.tsx", "offset": 40, "limit": 80}, 80),
        ({"path": "a.py", "start_line": 5, "end_line": 40}, 36),
        ({"command": "sed -n '40,$p' a.py"}, None),  # to the end: not said
        ({"command": "tail -n +40 a.py"}, None),
        ({"command": "head -n -5 a.py"}, None),
        ({"command": "sed -n '/def main/,/^$/p' a.py"}, None),
        ({"filePath": "/src/app.tsx", "offset": 40}, None),
        ({"command": "view", "path": "/repo/a.py", "view_range": [40, 90]}, 51),
        ({"command": "view", "path": "/repo/a.py", "view_range": [40, -1]}, None),  # to the end
        ({"command": "cat a.py"}, None),  # the whole file, not a range
        ({"command": "grep -n x a.py"}, None),
    ],
)
def test_requested_lines(query: Any, expected: int | None) -> None:
    assert requested_lines(query) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"command": "edit 1475:1475\n        return x\nend_of_edit"}, True),  # SWE-agent
        ({"command": "insert 12\nimport os\nend_of_insert"}, True),
        ({"start_line": 5, "end_line": 9, "replacement_text": "pass"}, True),
        ({"command": "insert", "path": "a.py", "insert_line": 3, "new_str": "x = 1"}, True),
        ({"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}, False),
        ({"search": "x = 1", "replace": "x = 2"}, False),
        ({"command": "str_replace", "path": "a.py", "old_str": "a", "new_str": "b"}, False),
        ({"command": "edit src/app.py"}, False),  # names no lines
        ({"command": "python edit.py 12:14"}, False),
    ],
)
def test_writes_by_line(args: dict[str, Any], expected: bool) -> None:
    assert writes_by_line(args) is expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # Claude Code's and OpenCode's Task, deepagents' task: a sub-agent's report
        ({"description": "Explore", "prompt": "Find the hooks", "subagent_type": "Explore"}, True),
        ({"description": "Review the PR for security issues", "subagent_type": "reviewer"}, True),
        ({"url": "https://example.org/docs", "prompt": "What are the rate limits?"}, True),
        ({"objective": "Map how sessions are stored and resumed"}, True),
        ({"task_id": "a2f0c7b", "block": True, "timeout": 30000}, False),  # a record: below
        ({"prompt": "go"}, False),  # no question: fewer than three words
        ({"task_id": "3", "status": "completed"}, False),  # a to-do list's update
        ({"command": "claude -p 'explain the hooks module'"}, False),  # a command it ran
        ({"query": "rate limits of the API"}, False),  # a search
        ({"file_path": "a.md"}, False),
        ("what are the rate limits", False),
        (None, False),
    ],
)
def test_asks_an_agent(query: Any, expected: bool) -> None:
    assert asks_an_agent(query) is expected


REPORT = "\n".join(
    [
        "## Findings",
        "",
        *(
            f"- **Stage {i}**: `hooks.go:{1200 + i}` clears `LastCheckpointID` (line {1246 + i})"
            " before the next prompt starts, so a split commit gets a new one."
            for i in range(100)
        ),
    ]
)


def test_a_sub_agents_report_stays_whole_as_another_models_answer() -> None:
    """It is the investigation the agent delegated, already distilled for it: an outline of
    it loses the file lines and names the agent goes on to use."""
    task = {"description": "Investigate", "prompt": "How are checkpoint IDs reused?"}
    assert shorten(REPORT, query={**task, "subagent_type": "Explore"}).text == REPORT
    assert shorten(REPORT).changed  # the same text from no one in particular


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"id": "d-016"}, True),  # an MCP server's directive_get
        ({"owner": "octo", "repo": "cli", "issue_number": 12}, True),  # GitHub's get_issue
        ({"order_id": "#W2378156"}, True),
        ({"taskId": "3"}, True),
        ({"task_id": "a2f0c7b", "block": True, "timeout": 30000}, True),  # TaskOutput
        ({"key": "PROJ-7"}, True),
        ({"name": "frontend-design"}, True),  # OpenCode's skill: instructions to follow
        ({"table_name": "orders"}, True),
        ({"promptName": "review"}, True),
        ({"name": "find the slow query"}, False),  # words, not a name
        # a command that shows one record by its id
        ({"command": "gh issue view 12 --comments"}, True),
        ({"command": "gh pr view 45 --repo octo/cli"}, True),
        ({"command": "cd /repo && cargo run -p ap -- directive show d-004"}, True),
        ({"command": ["bash", "-lc", "kubectl describe pod web-7f9c"]}, True),
        ("gh pr view 45", True),
        ({"command": "kubectl get pods -n prod"}, False),  # a listing: no record named
        ({"command": "git show HEAD:src/app.py"}, False),  # a file at a revision
        ({"command": "gh pr diff 6 --repo o/cli 2>/dev/null | head -1000"}, True),  # a part
        ({"command": "cd /testbed && git show 658bcc16f1 --stat"}, True),
        ({"command": "gh issue view 12 | grep -n token"}, False),  # searched
        ({"command": "git diff"}, False),  # the agent's own changes
        ({"command": "git diff -- src/app.py"}, False),
        ({"command": "git diff main...HEAD"}, True),  # a branch under review
        ({"command": "git diff origin/main..HEAD -- cmd/setup.go | head -400"}, True),
        ({"command": "git diff HEAD~3.."}, True),
        ({"command": "git diff src/../lib/a.py"}, False),  # a path, not a range
        ({"command": "git diff ../other/a.py"}, False),
        ({"command": "git diff main...HEAD && go test ./..."}, False),  # two programs
        ({"command": "gh issue list --state open"}, False),
        # an API request the agent wrote itself
        ({"command": "gh api repos/octo/cli/pulls/7/comments"}, True),
        ({"cmd": "gh api graphql -f query='query { repository { discussion(number: 9) } }'"}, True),
        ({"command": "gh api"}, False),
        # a code-mode cell: judged by its one tool call
        ({"input": "text(await tools.mcp__gh__fetch_pr({pr_number: 7, repo: 'o/r'}))"}, True),
        ({"input": "text(await tools.mcp__gh__fetch_pr({pr_number: n}))"}, False),  # computed
        ({"input": "await tools.a({id: 1}); await tools.b({id: 2})"}, False),  # two calls
        ({"input": "text(await tools.mcp__gh__list_prs({state: 'open'}))"}, False),
        ({"command": "show 12"}, False),  # no program before the verb
        ({"query": "open issues"}, False),  # a search
        ({"owner": "octo", "repo": "cli", "state": "open"}, False),  # a list, no record named
        ({"id": "d-016", "body": "a new body for it"}, False),  # an update with text
        ({"id": "d-016", "labels": ["bug"]}, False),
        ({"path": "a.py"}, False),
        ({"keyword": "x"}, False),
        ({"path": "src/app.py", "line_number": 1474}, False),  # a place in a file, no record
        ({}, False),
        ("d-016", False),
    ],
)
def test_fetches_a_record(query: Any, expected: bool) -> None:
    assert fetches_a_record(query) is expected


DIRECTIVE = json.dumps(
    {
        "id": "d-016",
        "title": "Measure actions per minute",
        "status": "active",
        "body": "\n".join(
            f"## Step {i}\n\nRecord `{i}` per session in `metrics_{i}.db`, then chart it."
            for i in range(80)
        ),
    },
    indent=2,
)


def test_a_record_fetched_by_its_id_stays_whole_as_a_file_read_does() -> None:
    """The agent asked for that record: its body is the document it reads next (a directive,
    an issue), kept as ``cat`` of the same document would be."""
    assert shorten(DIRECTIVE, query={"id": "d-016"}).text == DIRECTIVE
    assert shorten(DIRECTIVE, query={"query": "metrics"}).changed  # a search's hit is cut
    # shown by a command line: the same record
    shown = DIRECTIVE.replace('"', "")
    assert shorten(shown, query={"command": "cargo autopilot directive show d-016"}).text == shown
    assert shorten(shown, query={"command": "cargo autopilot directive list"}).changed


_VERBS = ("Animate", "Fade", "Scale", "Slide", "Blur", "Tint", "Lift", "Stagger", "Spring", "Hold")
_EASES = ("ease-out", "a spring", "ease-in-out", "a cubic curve", "steps", "no easing at all")
SKILL = "\n".join(
    line
    for i in range(12)
    for line in (
        f"## Rule {i}",
        "",
        *(
            f"- {verb} `panel_{i}_{k}` with {_EASES[(i + k) % 6]} over {100 + 7 * k} ms."
            for k, verb in enumerate(_VERBS)
        ),
        "",
    )
)


def test_a_skill_loaded_by_its_name_stays_whole() -> None:
    """OpenCode's ``skill(name=...)`` returns instructions the agent goes on to follow: an
    outline of them is a half of the rules (about 3k tokens here, above ``text_keep_tokens``)."""
    assert shorten(SKILL).changed  # the same text from no one in particular
    assert shorten(SKILL, query={"name": "emil-design-eng"}).text == SKILL


def test_files_read_many_at_once_are_read_as_files() -> None:
    """gemini-cli's ``read_many_files`` prints the documents it names one after another."""
    many = "--- docs/a.md ---\n" + DOC + "\n--- docs/b.md ---\n" + SKILL
    assert shorten(many, query={"paths": ["docs/*.md"]}).text == many
    assert shorten(many, query={"include": ["docs/*.md"], "recursive": True}).text == many


PR_DIFF = "\n".join(
    line
    for i in range(30)
    for line in (
        f"diff --git a/pkg/agent/agent_{i}.go b/pkg/agent/agent_{i}.go",
        f"--- a/pkg/agent/agent_{i}.go",
        f"+++ b/pkg/agent/agent_{i}.go",
        f"@@ -{10 * i},4 +{10 * i},6 @@ func Register{i}(r *Registry) error {{",
        f"     name := r.Name({i})",
        f"-    return r.Add{i}(name)",
        f"+    if _, err := exec.LookPath(name); errors.Is(err, exec.ErrNotFound{i}) {{",
        f'+        return fmt.Errorf("agent {i} not installed: %w", err)',
        "+    }",
        f"+    return r.Add{i}(name, agent.Default{i})",
        "     }",
    )
)


def test_a_change_fetched_by_its_id_stays_whole_and_the_agents_own_diff_is_cut() -> None:
    """A pull request's diff is what a reviewing agent reads line by line (the names it then
    comments on: ``exec.ErrNotFound``, ``agent.Default``); the agent's own ``git diff`` repeats
    the edits it made, and is cut as a log."""
    assert shorten(PR_DIFF, query={"command": "gh pr diff 227"}).text == PR_DIFF
    assert shorten(PR_DIFF, query={"command": "git show 4a54611"}).text == PR_DIFF
    # a branch's commits, as a reviewing agent reads them before sending its sub-agents off
    assert shorten(PR_DIFF, query={"command": "git diff main...HEAD"}).text == PR_DIFF
    own = shorten(PR_DIFF, query={"command": "git diff"})
    assert own.changed and own.kind == "diff"


TEST_LOG = "\n".join(
    [
        *(f"tests/test_mod.py::test_case_{i} PASSED [{i % 100:3d}%]" for i in range(400)),
        "FAILED tests/test_api.py::test_login - KeyError: 'token'",
        "======== 1 failed, 399 passed in 12.31s ========",
    ]
)


def test_a_log_fetched_by_an_id_is_still_cut_as_a_log() -> None:
    """A background command's output polled by its id (Claude Code's ``BashOutput``) is a log:
    its failures and summary are what the agent reads, as from any test run."""
    for query in ({"bash_id": "b7"}, {"task_id": "b7", "block": True, "timeout": 30000}):
        report = shorten(TEST_LOG, query=query)
        assert report.changed and report.kind == "log"
        assert "FAILED tests/test_api.py::test_login - KeyError: 'token'" in report.text


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


def test_a_document_the_agent_printed_or_searched_stays_whole_and_one_it_fetched_is_cut() -> None:
    assert shorten(DOC, query={"command": "cat specs/spec.md"}).text == DOC
    assert shorten(DOC, query={"command": "sed -n '1,400p' specs/spec.md"}).text == DOC
    # search hits are what the agent asked to see, with line numbers or without
    assert shorten(DOC, query={"command": "grep -r MUST specs"}).text == DOC
    assert shorten(DOC, query={"command": "curl -s https://example.com/spec.md"}).changed
    # read by a file tool named otherwise: gemini-cli's read_file (mid-2025), an editor's view
    assert shorten(DOC, query={"absolute_path": "/repo/specs/spec.md"}).text == DOC
    assert shorten(DOC, query={"command": "view", "path": "/repo/specs/spec.md"}).text == DOC


def test_source_printed_whole_keeps_its_outline_and_a_stretch_of_it_stays_whole() -> None:
    whole = shorten(CODE, query={"command": "cat app/handlers.py"}, max_tokens=200)
    assert whole.changed and whole.kind == "code"
    assert all(f"def handler_{i}(request):" in whole.text for i in range(60))
    assert shorten(CODE, query={"command": "sed -n '120,180p' app/handlers.py"}).text == CODE


def test_a_page_of_source_read_through_is_kept_as_the_whole_file_and_a_document_stays_whole() -> (
    None
):
    """``sed -n '1,200p' f`` reads a file a page at a time (``page_lines`` and more): its
    source keeps what ``cat`` would keep, and a document printed so stays whole."""
    query = {"command": ["bash", "-lc", "sed -n '1,240p' app/handlers.py"]}
    paged = shorten(CODE, query=query, max_tokens=200)
    whole = shorten(CODE, query={"command": "cat app/handlers.py"}, max_tokens=200)
    assert paged.changed and paged.text == whole.text
    assert shorten(DOC, query={"command": "sed -n '1,240p' specs/spec.md"}).text == DOC
    longer = ShortenSettings(page_lines=241)  # the setting decides
    assert shorten(CODE, query=query, max_tokens=200, options=longer).text == CODE
