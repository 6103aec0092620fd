"""Codex's code mode: a JavaScript cell judged by the commands and tools it calls, and what it
printed split into a header about the run and its parts, each shortened by its own kind."""

from __future__ import annotations

import itertools
import json
import time
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.data import TRAJECTORIES, needs_shared
from tokenlean import ShortenReport, shorten
from tokenlean.shorten import Retrieval
from tokenlean.shorten._asks import answers_a_query, asks_for_hits
from tokenlean.shorten._calls import command_of
from tokenlean.shorten._cells import MAX_CHARS, CellCall, cell_calls
from tokenlean.shorten._layout import header_length, parts
from tokenlean.shorten._reads import file_read

HINT = Retrieval("o1a2b3", "read_original")
CELL = (
    'const r = await tools.exec_command({cmd:"sed -n \'1,280p\' a.rs", workdir:"/w", '
    "max_output_tokens:30000, tty:false}); text(r.output);"
)


def test_a_cell_gives_its_tool_calls_and_their_literal_arguments() -> None:
    (call,) = cell_calls(CELL) or ()
    assert call == CellCall(
        "exec_command",
        {"cmd": "sed -n '1,280p' a.rs", "workdir": "/w", "max_output_tokens": 30000, "tty": False},
    )
    several = (
        "const [a, b] = await Promise.all([\n"
        '  tools.exec_command({"cmd": "cat a.rs"}),  // the file\n'
        "  tools.exec_command({cmd: `rg -n ${name} src`}),\n"
        '  tools.mcp__github__search_code({q: "repo:a/b x", per_page: 5}),\n'
        "]);\n"
        'const hits = ALL_TOOLS.filter(x => /git"hub/.test(x.name)); text(a.output);'
    )
    found = cell_calls(several) or ()
    assert [call.tool for call in found] == [
        "exec_command",
        "exec_command",
        "mcp__github__search_code",
    ]
    assert found[1] == CellCall("exec_command", {}, complete=False)  # computed at run time
    assert dict(found[2].args) == {"q": "repo:a/b x", "per_page": 5}
    assert cell_calls('text("open') is None
    assert cell_calls("x" * (MAX_CHARS + 1)) is None


def test_a_cell_is_judged_by_the_commands_it_runs() -> None:
    both = (
        "await Promise.all([tools.exec_command({cmd:\"sed -n '1,50p' a.rs\"}), "
        'tools.exec_command({cmd:"rg -n handler src"})]);'
    )
    assert command_of({"input": both}) == "sed -n '1,50p' a.rs\nrg -n handler src"
    assert file_read({"input": both}) == "range"  # a page and hits: a read of both
    unclear = "cmds.map(cmd => tools.exec_command({cmd, workdir: w}))"
    assert command_of({"input": unclear}) == "" and asks_for_hits({"input": unclear})
    search = 'const r = await tools.mcp__github__search_code({q: "x"}); text(r);'
    assert answers_a_query({"input": search})
    assert answers_a_query({"libraryId": "/nushell/book", "query": "background jobs"})
    assert not answers_a_query({"input": CELL}) and not answers_a_query({"path": "a.rs"})


HIT_BODY = "\n".join(
    line
    for k in range(40)
    for line in (
        f"## src/store/shard_{k}.rs",
        f"pub fn open_shard_{k}(path: &Path) -> Result<Shard> {{",
        *(f"    let part_{j} = read_part(path, {j})?;" for j in range(6)),
        "}",
    )
)
MCP_HITS = json.dumps({"content": [{"type": "text", "text": HIT_BODY}], "isError": False})


def test_an_mcp_search_result_is_kept_as_hits_not_outlined_as_source() -> None:
    report = shorten(MCP_HITS, query={"query": "open_shard", "repo": "acme/store"})
    assert report.text == MCP_HITS
    # the same code returned by a call that posed no query is outlined as before
    assert shorten(MCP_HITS, query={"repo": "acme/store", "ref": "main"}).changed


RUN = "Script completed\nWall time 0.6 seconds\nOutput:\n"
NOTES = "Warning: truncated output (original token count: 3031)\nTotal output lines: 237\n\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (RUN + "hello", len(RUN)),
        (RUN + NOTES + "hello", len(RUN + NOTES)),
        (RUN + NOTES + NOTES + "x", len(RUN + NOTES + NOTES)),
        ("Exit code: 0\nWall time: 1.3 seconds\nOutput:\nx", 44),  # older Codex CLIs
        ("Output:\nx", 0),  # a label alone is no header about a run
        ("a\n\nOutput:\nx", 0),
        ("Script completed\nWall time 0.6 seconds\nOutput: 3 files\nx", 0),
        ("x" * 500 + "\nOutput:\n", 0),
    ],
)
def test_header_length(text: str, expected: int) -> None:
    assert header_length(text) == expected


def test_parts_are_json_values_text_between_and_labelled_sections() -> None:
    text = '{"a": 1,\n "b": [1, 2]}\nexit=0 done\n[1, 2]\n=== PR 12 ===\n{"x": "y"} tail'
    assert parts(text) == [(0, 2), (2, 3), (3, 4), (4, 5), (5, 6)]
    assert parts("plain text\nonly") is None
    assert parts("[lint] $ run\n[lint] ok") is None  # brackets that open no JSON


JSON_PARTS = RUN + "\n".join(
    json.dumps({"id": f"PRRT_{i:04d}", "body": " ".join([f"comment {i} line"] * 400)})
    for i in range(3)
)


def test_several_json_values_a_cell_printed_are_each_shortened_as_json() -> None:
    report = shorten(
        JSON_PARTS,
        query={"input": 'text(await tools.exec_command({cmd:"kubectl get ev -o json"}))'},
    )
    assert report.changed and report.kind == "json"
    assert report.text.startswith(RUN)  # the header about the run, as it was
    for i, line in enumerate(report.text[len(RUN) :].split("\n")):
        assert json.loads(line)["id"] == f"PRRT_{i:04d}"  # each part still valid JSON


def test_what_a_cell_calling_no_tool_printed_is_kept_as_asked() -> None:
    """``text(ALL_TOOLS.filter(...))`` prints the names its own script picked out: the agent
    calls them next, as it uses a search's hits. The same lines printed by a command it ran to
    check something are still cut."""
    names = "\n".join(f"mcp__apps__github_{verb}_{i}" for i in range(60) for verb in ("get",))
    listing = RUN + names
    cell = 'text(ALL_TOOLS.filter(x => x.name.startsWith("mcp__apps__github_")).map(x => x.name))'
    assert shorten(listing, query={"input": cell}, max_tokens=100).text == listing
    ran = shorten(listing, query={"input": 'await tools.exec_command({cmd:"make tools"})'},
                  max_tokens=100)  # fmt: skip
    assert ran.changed
    assert shorten(names, query={"input": cell}, max_tokens=100).changed  # no cell's header


_JSISH = st.text(alphabet="tools.exec_command({cmd:'\"`$})[]/\\\n,;:=>a1 ", max_size=300)


@given(_JSISH)
@settings(max_examples=300, deadline=None)
def test_reading_any_cell_never_raises(code: str) -> None:
    found = cell_calls(code)
    assert found is None or all(isinstance(call.tool, str) for call in found)
    command_of({"input": code})


@given(st.text(alphabet='{}[]":,\n =#-Output:ScriptWal 0123', max_size=400))
@settings(max_examples=300, deadline=None)
def test_splitting_any_output_never_raises_and_covers_every_line(text: str) -> None:
    size = header_length(text)
    assert 0 <= size <= len(text)
    found = parts(text)
    if found is not None:
        assert found[0][0] == 0 and found[-1][1] == text.count("\n") + 1
        assert all(a < b == c for (a, b), (c, _) in itertools.pairwise(found))


@pytest.mark.parametrize(
    "text",
    [
        "[" * 200_000,
        '{"a":' * 50_000,
        "\n".join(["[1, 2, 3"] * 50_000),
        "\n".join(['{"k": "' + "v" * 40] * 20_000),
        "=== a ===\n" * 50_000,
    ],
)
def test_splitting_an_output_stays_linear(text: str) -> None:
    started = time.perf_counter()
    parts(text)
    header_length(text)
    assert time.perf_counter() - started < 2.0  # quadratic would take minutes


@pytest.mark.parametrize(
    "code",
    ["`" * MAX_CHARS, "tools.a({" * (MAX_CHARS // 9), "/" * MAX_CHARS, "tools.x(" * 5000],
)
def test_reading_a_cell_stays_linear(code: str) -> None:
    started = time.perf_counter()
    cell_calls(code)
    assert time.perf_counter() - started < 2.0  # quadratic would take minutes


# -- real cells of Codex Desktop 0.144 (gpt-5.6, code mode) --------------------------------------


@cache
def _messages(name: str) -> list[dict[str, Any]]:
    path = TRAJECTORIES / "codex_desktop_0144" / f"{name}.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return list(data["messages"])


def _run(name: str, index: int) -> tuple[str, ShortenReport]:
    messages = _messages(name)
    message = messages[index]
    content = message["content"]
    text = content if isinstance(content, str) else "\n".join(b["text"] for b in content)
    calls = {c["id"]: c for m in messages[:index] for c in (m.get("tool_calls") or [])}
    return text, shorten(text, query=calls[message["tool_call_id"]]["args"], retrieval=HINT)


@needs_shared
@pytest.mark.parametrize(
    ("name", "index", "kind"),
    [
        # sed -n '145,285p' oauth.rs && sed -n '450,575p' ... && sed -n '620,875p' ...: three
        # stretches chosen by number, whose bodies the agent's patch quotes next
        ("codex_mise_019f61f9-98c0_ep4", 24, "code"),
        # four sed pages of two files and rg -n hits, in one command
        ("codex_mise_019f677b-a986_ep2", 15, "code"),
        # a skill's script printing the PR's review threads as JSON, after the run's header
        ("codex_hk_019f5cfd-b70b_ep7", 7, "json"),
        # Promise.all of that script, gh pr checks and git status: JSON values and text
        ("codex_mise_019f61f8-634c_ep2", 11, "json"),
    ],
)
def test_a_cell_that_reads_keeps_what_it_read(name: str, index: int, kind: str) -> None:
    text, report = _run(name, index)
    assert report.text == text and report.kind == kind


@needs_shared
def test_a_cell_running_a_build_is_still_cut_as_a_log_under_its_header() -> None:
    _, report = _run("codex_mise_019f627f-f4b0_ep3", 29)  # mise run lint-fix
    assert report.changed and report.text.startswith(RUN.replace("0.6", "6.1"))
    assert "✔ lua-check" in report.text


@needs_shared
def test_labelled_sections_of_json_are_each_shortened_as_json() -> None:
    # gh auth status; for pr in ...; echo "=== PR $pr unresolved ==="; gh api ... --jq ...
    _, report = _run("codex_mise_019f6782-3ad8_ep5", 9)
    assert report.changed and report.kind == "json"
    sections = report.text.split("=== PR 11023 unresolved ===\n", 1)[1].split("\n", 1)
    assert json.loads(sections[0])[0]["path"] == "src/system/packages/mod.rs"
