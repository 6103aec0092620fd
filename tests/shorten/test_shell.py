"""A shell command split into its parts, and what each part prints: one command that reads
several things (``sed -n`` pages, ``rg -n`` hits, ``git status``) is a read of them."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenlean import shorten
from tokenlean.shorten._asks import asks_for_hits, files_read
from tokenlean.shorten._calls import runs_own_script
from tokenlean.shorten._parts import compound_read, searches
from tokenlean.shorten._reads import file_read, requested_lines
from tokenlean.shorten._shell import MAX_CHARS, statements


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat a", [[["cat", "a"]]]),
        ("sed -n '1,9p' a.rs && rg -n 'x y' src; git status", [
            [["sed", "-n", "1,9p", "a.rs"]], [["rg", "-n", "x y", "src"]], [["git", "status"]]
        ]),
        ("nl -ba f | sed -n '40,90p'", [[["nl", "-ba", "f"], ["sed", "-n", "40,90p"]]]),
        ("git status\nrg -n x \\\n  src", [[["git", "status"]], [["rg", "-n", "x", "src"]]]),
        ("rg x |\n  head -5", [[["rg", "x"], ["head", "-5"]]]),  # a pipe waits for its stage
        ('echo "=== $f ===" # a label', [[["echo", "=== $f ==="]]]),
        ("ls 2>/dev/null || true", [[["ls", "2>", "/dev/null"]], [["true"]]]),
        ("cmd 2>&1 | tail", [[["cmd", "2>&1"], ["tail"]]]),
        ("x=$(git rev-parse HEAD); echo $x", [[["x=$(git rev-parse HEAD)"]], [["echo", "$x"]]]),
        # a heredoc's body is a script's text, not commands
        ("python3 - <<'EOF'\nimport os; os.remove('x')\nEOF\ncat a", [
            [["python3", "-", "<<", "EOF"]], [["cat", "a"]]
        ]),
        ("cat <<-END >f\n\tx; rm -rf /\n\tEND\nls", [[["cat", "<<-", "END", ">", "f"]], [["ls"]]]),
        ("for f in a b; do cat $f; done", [
            [["for", "f", "in", "a", "b"]], [["do", "cat", "$f"]], [["done"]]
        ]),
        ("(cd x && ls)", [[["cd", "x"]], [["ls"]]]),
        ("cat 'open", None),
        ('echo "open', None),
        ("x" * (MAX_CHARS + 1), None),
    ],
)  # fmt: skip
def test_statements(command: str, expected: Any) -> None:
    assert statements(command) == expected


@pytest.mark.parametrize(
    ("command", "read", "span", "files"),
    [
        # several stretches, hits and a status: a view of them, whatever each page's length
        ("sed -n '120,225p' a.rs && sed -n '340,410p' a.rs && rg -n 'apply(' --glob '*.rs'",
         "range", None, 0),
        ("sed -n '145,285p' a.rs && sed -n '450,575p' a.rs", "range", None, 0),
        ("git status --short; cat a.rs b.rs", "file", None, 2),
        ("echo '== a'; cat a.rs; echo '== b'; cat b.rs", "file", None, 2),
        ("for f in a.rs b.rs; do echo \"== $f\"; nl -ba \"$f\"; done", "file", None, 1),
        ("cd src && git diff -- a.rs && git status -sb", "range", None, 0),
        ("sed -n '1,300p' a.rs; git switch -c fix", "range", 300, 0),  # one page is that page
        ("git show HEAD:a.rs | sed -n '1,50p'; rg -n x", "range", None, 0),
        ("find src -name '*.rs' -exec wc -l {} +; sed -n '1,40p' a.rs", "range", None, 0),
        ("gh auth status && git log --oneline -5 && cat README.md", "file", None, 1),
        # a build, a test run, a network call, a write: no read
        ("cargo test && cat a.rs", None, None, 0),
        ("cat a.rs > b.rs; cat b.rs", None, None, 0),
        ("sed -i 's/a/b/' f; cat f", None, None, 0),
        ("git status; git log", None, None, 0),  # nothing read, searched or diffed
        ("cd x && cat a.rs", None, None, 0),  # one read: judged as one
    ],
)  # fmt: skip
def test_compound_read(command: str, read: str | None, span: int | None, files: int) -> None:
    found = compound_read(command)
    got = (found.read, found.span, found.files) if found else None
    assert got == ((read, span, files) if read else None)


def test_a_command_of_several_reads_is_read_as_the_call_asked_it() -> None:
    query = {"command": "sed -n '145,285p' a.rs && sed -n '450,575p' a.rs"}
    assert file_read(query) == "range"
    assert requested_lines(query) is None  # stretches chosen one by one: no page rule
    assert files_read({"command": "cat a.rs; cat b.rs c.rs"}) == 3
    # Codex CLI hands the script to a shell as a list of words; its quotes stay intact
    listed = {"command": ["bash", "-lc", "sed -n '1,5p' f && rg -n 'a b' src"]}
    assert file_read(listed) == "range"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("grep -r 'def main' src", True),
        ("cd repo && grep -A 3 TODO a.py", True),
        ("rg x src | head -50", True),
        ("cat f | grep x", True),
        ("git log --oneline | grep fix", True),
        ("grep -c x f | wc -l", False),  # a count
        ("rg x; cat a", False),
        ("pytest -q", False),
    ],
)
def test_searches(command: str, expected: bool) -> None:
    assert searches(command) is expected
    assert asks_for_hits({"command": command}) is expected


BODY = [f"    let step_{k} = transform(&request, {k}, retries);" for k in range(10)]
SOURCE = "\n".join(
    line
    for i in range(60)
    for line in (f"fn handler_{i}(request: &Request) -> Result<()> {{", *BODY, "}", "")
)


def test_pages_and_hits_printed_together_stay_whole_as_asked() -> None:
    hits = "\n".join(f"src/a.rs:{i}:fn handler_{i}(request: &Request)" for i in range(40))
    text = SOURCE + "\n" + hits
    command = "sed -n '1,300p' src/a.rs && sed -n '300,600p' src/a.rs && rg -n handler src"
    assert shorten(text, query={"command": command}).text == text
    # the same source as one page of a file read through is outlined, as before
    assert shorten(SOURCE, query={"command": "sed -n '1,800p' src/a.rs"}).changed


def test_hits_without_line_numbers_are_kept_as_asked_not_cut_as_a_log() -> None:
    hits = "\n".join(
        f"src/mod_{i}.py:    total_{i} = compute(rows[{i}], scale={i * 3}, name='part {i}')"
        for i in range(120)
    )
    assert shorten(hits, query={"command": "grep -r compute src"}).text == hits
    assert shorten(hits, query={"command": "python make_hits.py"}).changed


_SHELLISH = st.text(alphabet="ab '\"\\$()|&;<>-\n\t#=`{}", max_size=300)


@given(_SHELLISH)
@settings(max_examples=300, deadline=None)
def test_splitting_any_command_never_raises(command: str) -> None:
    found = statements(command)
    assert found is None or all(all(stage for stage in s) for s in found)
    compound_read(command)
    searches(command)


@pytest.mark.parametrize(
    "command",
    [
        "$(" * (MAX_CHARS // 2),
        "<<a\n" * (MAX_CHARS // 4),
        "'a'" * (MAX_CHARS // 3),
        "\\" * MAX_CHARS,
        "a|" * (MAX_CHARS // 2),
        "cat <<EOF\n" + "x\n" * (MAX_CHARS // 2 - 10),
    ],
)
def test_splitting_stays_linear_on_the_longest_commands(command: str) -> None:
    started = time.perf_counter()
    statements(command)
    compound_read(command)
    assert time.perf_counter() - started < 2.0  # quadratic would take minutes


LS_R = "\n".join(
    [".:", "Cargo.toml  README.md  src  tests", ""]
    + [
        line
        for k in range(40)
        for line in (f"./src/mod_{k}:", f"args_{k}.rs  install.rs  mod.rs  run_{k}.rs  util/", "")
    ]
)


def test_ls_recursive_in_columns_is_a_listing() -> None:
    report = shorten(LS_R, query={"command": "ls -R"})
    assert report.kind == "listing" and report.text == LS_R


TABLE = "\n".join(
    ["source          calls   tokens    billed   recall"]
    + [
        f"source_{i:03d}   {100 + i * 7:5d}   {20000 + i * 913:7d}   0.{700 + i}   0.{900 + i}"
        for i in range(100)
    ]
)


def test_a_heredoc_script_printing_a_table_keeps_rows_not_a_logs_similar_lines() -> None:
    script = {"command": "python3 - <<'EOF'\nimport pytest  # a word of a runner\nEOF"}
    assert runs_own_script(script)
    report = shorten(TABLE, query=script)
    kept = [line for line in report.text.split("\n") if line.startswith("source_")]
    assert len(kept) >= 40  # rows whose numbers differ are records, not one similar run
    assert "similar" not in report.text
