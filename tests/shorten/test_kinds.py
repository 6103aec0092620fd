"""Each content kind handled on purpose, on real tool outputs from the shared trajectories.

Every test shortens one recorded tool result with the arguments of the call that produced it
(as the first-sight middleware does) and checks what was kept and what was cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from typing import Any

import pytest

from tests.data import TOOL_OUTPUTS, TRAJECTORIES, needs_shared
from tokenlean import ShortenReport, ShortenSettings, shorten
from tokenlean.shorten import Retrieval
from tokenlean.shorten._calls import runs_own_script
from tokenlean.shorten._detect import numbered_view
from tokenlean.shorten._seen import Seen
from tokenlean.shorten._text import estimate_tokens

pytestmark = needs_shared

HINT = Retrieval("o1a2b3", "read_original")


@cache
def _trajectory(source: str, name_part: str) -> dict[str, Any]:
    paths = sorted((TRAJECTORIES / source).glob(f"*{name_part}*.json"))
    paths = [p for p in paths if p.stem.endswith(name_part)] or paths  # ep1, not ep12
    assert len(paths) == 1, f"{source}/*{name_part}*: {paths}"
    data: dict[str, Any] = json.loads(paths[0].read_text(encoding="utf-8"))
    return data


def _result(source: str, name_part: str, index: int) -> tuple[str, dict[str, Any]]:
    """A tool result's text and the arguments of the call that produced it."""
    messages = _trajectory(source, name_part)["messages"]
    message = messages[index]
    assert message["role"] == "tool"
    content = message["content"]
    text = content if isinstance(content, str) else "\n".join(b["text"] for b in content)
    calls = [c for m in messages[:index] for c in (m.get("tool_calls") or [])]
    args = next(c["args"] for c in calls if c["id"] == message["tool_call_id"])
    return text, args


def _run(source: str, name_part: str, index: int, **kwargs: Any) -> tuple[str, ShortenReport]:
    text, args = _result(source, name_part, index)
    return text, shorten(text, query=args, retrieval=HINT, **kwargs)


# -- short dense observations ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "name", "index"),
    [
        ("reflexion_hotpotqa_react", "correct_027", 8),  # a Wikipedia search result (~950 tokens)
        ("react_webshop", "webshop_015", 7),  # a product page
        (
            "tau2_telecom_gpt41",
            "contract_end_suspension_lock_sim_card_pin_unseat_sim_card_PERSONA_E",
            15,
        ),  # a billing lookup (JSON)
        ("tau2_retail_gpt41", "task_108", 15),  # an order record (JSON, 4-item arrays)
        ("openagents_claude_code", "113535", 2),  # an issue's description (~960 tokens)
    ],
)
def test_short_dense_observations_pass_whole(source: str, name: str, index: int) -> None:
    text, report = _run(source, name, index)
    assert estimate_tokens(text) > ShortenSettings().max_tokens  # the old budget would cut it
    assert report.text == text and not report.changed


def test_a_retail_order_keeps_every_item_id_and_price() -> None:
    _text, report = _run("tau2_retail_gpt41", "task_108", 15)
    order = json.loads(report.text)
    assert order["order_id"] == "#W1679211" and len(order["items"]) == 4
    for ref in ("6268080249", "7127170374", "244.02", "52.03"):
        assert ref in report.text


# -- JSON records from APIs ------------------------------------------------------------------------


def test_a_crushed_issue_list_keeps_rare_statuses_and_names_what_it_dropped() -> None:
    # the record as any tool might return it: fetched by its id, it stays whole (below)
    text, _args = _result("openagents_claude_code", "105911", 4)
    report = shorten(text, retrieval=HINT)
    data = json.loads(report.text)  # still valid JSON
    assert report.kind == "json" and report.tokens_after < 0.6 * report.tokens_before
    kept = {item["number"]: item for item in data["issues"] if isinstance(item, dict)}
    # the three in_progress issues among done ones, and the one open and blocked, are all kept
    assert {961, 963, 964, 794} <= set(kept)
    assert kept[794]["is_blocked"] is True
    markers = [item for item in data["issues"] if isinstance(item, str)]
    dropped = sum(int(m.split()[1]) for m in markers)
    assert dropped == 23 - len(kept)
    assert any("number 647-651, 711-712, 788-791, 821" in m for m in markers)
    assert 'read_original("o1a2b3")' in markers[0]  # the first marker says how to get them
    # the markdown body is cut as a document: its headings stay, in order
    body = data["body"]
    assert (
        body.startswith("## Goal") and "## Architecture" in body and "## Testing Strategy" in body
    )
    assert body.index("## Architecture") < body.index("## Testing Strategy")
    assert 'read_original("o1a2b3")' in body


def test_short_arrays_stay_whole_in_every_fallback_try() -> None:
    record = {
        "id": "r-1",
        "notes": "x " * 3000,  # forces the later, harsher tries
        "items": [{"item_id": str(1000 + i), "price": 10.5 + i} for i in range(6)],
        "log": [f"event {i}" for i in range(400)],
    }
    text = json.dumps(record)
    report = shorten(text, retrieval=HINT)
    data = json.loads(report.text)
    assert data["items"] == record["items"]  # six items: never crushed
    assert len(data["log"]) < 400 and any("similar items omitted" in str(x) for x in data["log"])
    assert len(data["notes"]) < len(record["notes"])


def test_json_records_under_the_keep_size_are_left_alone() -> None:
    record = {"orders": [{"order_id": f"#W{i:07d}", "total": i * 3.25} for i in range(12)]}
    text = json.dumps(record, indent=2)
    assert estimate_tokens(text) <= ShortenSettings().json_keep_tokens
    assert shorten(text).text == text


# -- file views with line numbers ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "name", "index", "line"),
    [
        ("openagents_claude_code", "174827", 18, "AllowAllPermissions, DenyAllPermissions"),
        ("sweagent", "install_from_source__marshmallow-code__m_f234b311", 5, "46:setup("),
        ("miniswe_deepseek", "astropy-12907", 23, "171:def _coord_matrix(model, pos, noutp):"),
    ],
)
def test_file_views_under_the_view_size_pass_whole(
    source: str, name: str, index: int, line: str
) -> None:
    text, report = _run(source, name, index)
    assert numbered_view(text.split("\n")) is not None
    assert estimate_tokens(text) <= ShortenSettings().view_keep_tokens
    assert report.text == text and line in report.text


def _numbers(text: str) -> list[int]:
    return [int(m.group(1)) for m in re.finditer(r"^(\d+):", text, re.MULTILINE)]


@pytest.mark.parametrize(
    ("name", "index", "kept"),
    [
        # ``open numpy_handler.py 293``: the check the issue names, where the agent edits next
        ("pydicom-1458", 12, range(273, 314)),
        # ``edit 287:296``: its echo keeps what it wrote and what is around it (a line it
        # wrote that stands at 281 as well, ``raise AttributeError(``, counts there too)
        ("pydicom-1458", 20, range(261, 317)),
        # ``open fields.py 1474`` with the cursors at 1374: the selection stays too
        (
            "cursors_window100__marshmallow-cod_b53556ca",
            13,
            [*range(1374, 1395), *range(1454, 1495)],
        ),
    ],
)
def test_a_window_around_a_named_line_keeps_the_lines_near_it(
    name: str, index: int, kept: Sequence[int]
) -> None:
    text, report = _run("sweagent", name, index)
    assert _numbers(text)[-1] - _numbers(text)[0] >= 99 and report.changed
    assert _numbers(report.text) == list(kept)
    assert text.split("\n")[0] == report.text.split("\n")[0]  # [File: ... (N lines total)]
    assert "(Open file: " in report.text


def test_a_whole_source_file_read_keeps_its_outline_with_whole_re_exports() -> None:
    # 10.7k tokens of lib.rs (a Read of the path alone): whole at the default; past a smaller
    # limit, its module list and every name its multi-line ``pub use m::{...};`` blocks
    # re-export, which the agent went on to quote
    whole = _run("openagents_claude_code", "143545", 8, context="look at nip44 exports")[1]
    assert not whole.changed
    small = ShortenSettings(file_keep_tokens=2_000)
    text, report = _run(
        "openagents_claude_code", "143545", 8, context="look at nip44 exports", options=small
    )
    out = report.text.split("\n")
    assert report.kind == "code" and report.changed
    assert small.file_keep_tokens < report.tokens_after < 0.8 * report.tokens_before
    assert "   206→mod nip07;" in out
    for block in ("nip07", "nip42"):
        start = text.index(f"pub use {block}::{{")
        declaration = text[text.rindex("\n", 0, start) + 1 : text.index("};", start) + 2]
        assert all(line in out for line in declaration.split("\n"))
    # every gap is a range of the file's own line numbers (what the agent's Read can fetch)
    assert out[0] == '     [... 196 lines omitted; read_original("o1a2b3", "1-196") ...]'
    assert out[1].startswith("   197→")


def test_the_same_file_read_as_an_asked_range_stays_whole() -> None:
    text, args = _result("openagents_claude_code", "143545", 8)
    asked = {**args, "offset": 1, "limit": 2000}
    assert shorten(text, query=asked, retrieval=HINT).text == text
    assert shorten(text, query=args, retrieval=HINT, options=_WHOLE_FILES).text == text


_WHOLE_FILES = ShortenSettings(file_keep_tokens=12_000)
#: A limit under the files below, to see what a file longer than the limit keeps.
_SMALL_FILES = ShortenSettings(file_keep_tokens=2_000)


def _python_module(functions: int) -> str:
    lines = ["from collections.abc import (", "    Mapping,", "    Sequence,", ")", "import os", ""]
    for k in range(functions):
        lines += [
            f"def handler_{k}(",
            f"    request_{k}: Mapping[str, str],",
            "    *,",
            f"    retries_{k}: int = 3,",
            ") -> Sequence[str]:",
            f'    """Serve request {k}."""',
        ]
        lines += [
            f"    value_{k}_{j} = request_{k}.get('key_{j}', os.sep) * {j}" for j in range(12)
        ]
        lines += [f"    return [value_{k}_0]", ""]
    return "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(lines, 1))


def test_a_whole_python_file_read_keeps_whole_signatures_and_imports() -> None:
    text = _python_module(40)
    read = {"file_path": "/repo/app/handlers.py"}
    assert shorten(text, query=read, retrieval=HINT).text == text  # under the default limit
    report = shorten(text, query=read, retrieval=HINT, options=_SMALL_FILES)
    out = report.text.split("\n")
    assert report.kind == "code" and report.changed
    declarations = [
        line
        for line in text.split("\n")
        if re.search(
            r"\u2192(from |    Mapping|    Sequence|\)$|import |def |    request_|    \*,|"
            r"    retries_|\) -> )",
            line,
        )
    ]
    assert len(declarations) == 5 + 40 * 5 and all(line in out for line in declarations)
    small = _python_module(3)  # under file_keep_tokens: whole
    assert estimate_tokens(small) <= _SMALL_FILES.file_keep_tokens
    assert shorten(small, query=read, retrieval=HINT, options=_SMALL_FILES).text == small
    ranged = {**read, "offset": 1, "limit": 2000}  # asked for: a view, whole to its own size
    assert shorten(text, query=ranged, retrieval=HINT).text == text


def test_a_long_file_view_keeps_its_outline_and_the_region_the_query_names() -> None:
    # the same file, too long to keep whole as a view or as a file read
    options = ShortenSettings(view_keep_tokens=3000, file_keep_tokens=3000)
    text, report = _run(
        "openagents_claude_code", "143545", 8, context="look at nip44 exports", options=options
    )
    out = report.text.split("\n")
    original = text.split("\n")
    assert report.kind == "code" and report.changed
    assert report.tokens_after >= options.view_keep_tokens * 0.9
    assert "   206→mod nip07;" in out and "   207→mod nip09;" in out  # the module list
    for i, line in enumerate(original):  # every line within 20 of a match to the query
        if "nip44" in line.lower():
            for near in original[max(0, i - 20) : i + 21]:
                assert near in out


@pytest.mark.parametrize(
    "lines",
    [
        ["     1→import os", "     2→", "     3→def main():", "     4→    pass"],  # Read
        ["     7\tclass A:", "     8\t    x = 1", "     9\t    y = 2"],  # cat -n
        ["12:def f():", "13-    return 1", "14-", "--", "40:def g():"],  # grep -n -A
        [
            "[File: /a/b.py (90 lines total)]",
            "(10 more lines above)",
            "11:x = 1",
            "12:y = 2",
            "13:",
        ],
    ],
)
def test_numbered_views_are_recognised(lines: list[str]) -> None:
    prefixes = numbered_view(lines)
    assert prefixes is not None and any(prefixes)


@pytest.mark.parametrize(
    "lines",
    [
        ["2024-01-02 12:00:01 INFO start", "2024-01-02 12:00:02 INFO ready", "2024-01-02 stop"],
        ["src/a.py:12:5: error: bad", "src/a.py:40:1: error: worse", "src/b.py:3:1: note: x"],
        ["3 passed", "1 failed", "0 errors", "done"],
    ],
)
def test_logs_with_leading_numbers_are_not_views(lines: list[str]) -> None:
    assert numbered_view(lines) is None


# -- documents -------------------------------------------------------------------------------------


def test_a_document_keeps_its_table_rows_before_its_references() -> None:
    text, report = _run("tapeagents_gaia", "l1_task052", 4)
    assert report.kind == "text" and report.changed
    rows = [line for line in text.split("\n") if line.startswith(("| 19", "| 20"))]
    assert len(rows) == 20 and all(row in report.text for row in rows)
    assert "Denmark's top orchestra plays" not in report.text  # a reference goes first


def test_a_document_keeps_its_conclusion() -> None:
    _text, report = _run("tapeagents_gaia", "l1_task003", 4)
    assert report.changed and report.tokens_after < 0.6 * report.tokens_before
    assert "Therefore, the bag has a capacity of 0.1777 m3." in report.text


def test_a_long_markdown_file_read_with_line_numbers_keeps_its_headings() -> None:
    # 5.7k tokens: whole at the defaults (a view), so read as one past a smaller view size
    text, report = _run(
        "openagents_claude_code", "113535", 6, options=ShortenSettings(view_keep_tokens=3000)
    )
    assert report.changed
    headings = [line for line in text.split("\n") if re.match(r"\s+\d+→#{1,4} ", line)]
    assert len(headings) > 20 and all(h in report.text.split("\n") for h in headings)


# -- accessibility trees and HTML pages ------------------------------------------------------------


def test_a_page_keeps_every_element_the_agent_can_act_on() -> None:
    text, report = _run("tapeagents_workarena", "order-ipad-pro", 9)
    out = report.text.split("\n")
    assert report.kind == "page" and report.tokens_after < 0.6 * report.tokens_before
    elements = [line for line in text.split("\n") if line.lstrip().startswith("BID:")]
    assert len(elements) > 40 and all(line in out for line in elements)
    boiler = [line for line in text.split("\n") if line.strip().startswith("generic, live=")]
    assert boiler and not any(line in out for line in boiler)


def test_a_page_sent_again_points_back_in_a_few_coarse_stretches() -> None:
    first, _ = _result("tapeagents_workarena", "order-ipad-pro", 9)
    again, args = _result("tapeagents_workarena", "order-ipad-pro", 11)
    seen = Seen()
    seen.add(shorten(first, query=args).text)  # what the agent was shown the first time
    report = shorten(again, query=args, seen=seen, retrieval=HINT)
    pointers = report.text.count(" omitted")
    assert 1 <= pointers <= 3  # one pointer per unchanged stretch, not many small ones
    assert report.tokens_after < 0.25 * report.tokens_before
    # what the first shortening cut is sent now, and every element is visible one way or another
    for line in again.split("\n"):
        if line.lstrip().startswith("BID:"):
            assert line in report.text or line.strip() in seen


def test_an_html_page_keeps_its_form_controls() -> None:
    text, args = _result("sweagent", "i_got_id_demo", 31)
    options = ShortenSettings(max_tokens=40, text_keep_tokens=100)
    report = shorten(text, query=args, options=options)
    assert report.kind == "page" and report.changed
    for line in text.split("\n"):
        if "<input" in line or "<form" in line:
            assert line in report.text


# -- repeated tracebacks ---------------------------------------------------------------------------


def test_a_traceback_printed_twice_is_sent_once_with_a_pointer() -> None:
    text, report = _run("miniswe_deepseek", "django-15388", 183)
    frame = '  File "/testbed/django/test/utils.py", line 466, in enable'
    assert text.count(frame) == 2 and report.text.count(frame) == 1
    assert "IndexError: pop from empty list" in report.text
    assert re.search(r"copies of the tracebacks in lines \d+-\d+ above", report.text)


def test_repeated_frames_in_a_test_log_collapse_but_each_error_stays() -> None:
    text = (TOOL_OUTPUTS / "test_logs" / "swebench_eval__django__django-11019.txt").read_text()
    report = shorten(text, max_tokens=10_000)
    assert re.search(r"traceback lines omitted: a copy of lines \d+-\d+ above", report.text)
    for line in text.split("\n"):
        if line.startswith("TypeError: merge()"):
            assert line in report.text


def test_the_same_traceback_many_times_is_one_copy_and_a_count() -> None:
    trace = [
        "Traceback (most recent call last):",
        '  File "/app/worker.py", line 88, in run',
        "    result = handle(job)",
        '  File "/app/jobs.py", line 12, in handle',
        "    raise RuntimeError('queue closed')",
        "RuntimeError: queue closed",
    ]
    text = "\n".join(f"retrying job (attempt {i} of 30)\n" + "\n".join(trace) for i in range(30))
    report = shorten(text, max_tokens=10_000, retrieval=HINT)
    assert report.text.count(trace[1]) == 1 and report.text.count(trace[-1]) == 1
    assert "28 copies of lines 2-7 above and 27 other lines" in report.text
    assert report.tokens_after < 0.1 * report.tokens_before


# -- listings --------------------------------------------------------------------------------------


def test_a_listing_of_distinct_paths_is_not_collapsed() -> None:
    text, report = _run("miniswe_deepseek", "sqlfluff-1733", 5)
    paths = [line for line in text.split("\n") if line.startswith("/testbed/")]
    assert len(paths) > 10 and all(p in report.text.split("\n") for p in paths)
    assert "similar" not in report.text


@pytest.mark.parametrize(
    ("name", "index", "names"),
    [
        # ls -la of a project's root: it read README.md and pyproject.toml next
        ("OpenPrintKit_c61729d4-da6d_ep1", 3, ["README.md", "pyproject.toml", "opk"]),
        # PowerShell's Get-ChildItem, padded to the console's width
        ("agentic-neurodata-conver_019985ca", 4, ["README.md", "pyproject.toml"]),
        # git status -sb of ~280 changed files: it opened ones from the middle
        (
            "MoonMind_019a7ae6-1945_ep2",
            36,
            ["celery_worker/speckit_worker.py", "ensure_codex_config"],
        ),
    ],
)
def test_a_long_listing_keeps_every_name(name: str, index: int, names: list[str]) -> None:
    """``ls -l``, ``Get-ChildItem`` and ``git status --short`` list one entry per line with the
    name last: listings, kept whole up to ``listing_keep_tokens`` (they were cut as logs)."""
    text, report = _run("codex_cli_rollouts", name, index)
    assert report.kind == "listing" and report.text == text
    assert all(n in text for n in names)
    small = ShortenSettings(listing_keep_tokens=0)
    assert shorten(text, options=small, retrieval=HINT).changed  # the setting decides


def test_a_long_glob_keeps_the_paths_it_can_and_never_merges_names() -> None:
    _text, report = _run("openagents_claude_code", "104915", 10)
    assert report.kind == "listing"
    assert not any(o.reason == "similar" for o in report.omissions)
    assert "/crates/autopilot/src/lib.rs" in report.text


# -- logs and the agent's own scripts --------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "name", "index", "values"),
    [
        ("miniswe_deepseek", "django-11848", 17, ["Actual year: 1996", "Actual year: 2016"]),
        ("sweagent", "crypto__katy", 15, ["[16] Got random number: 1364650861"]),
        ("sweagent", "pwn__warmup", 13, ["FLAG{LET_US_BEGIN_CSAW_2016}"]),
    ],
)
def test_a_script_of_the_agents_own_keeps_its_values(
    source: str, name: str, index: int, values: list[str]
) -> None:
    text, args = _result(source, name, index)
    assert runs_own_script(args)
    report = shorten(text, query=args, retrieval=HINT)
    for value in values:
        assert value in text and value in report.text


def test_a_flag_in_a_tool_log_is_kept() -> None:
    _text, report = _run("sweagent", "BabyTimeCapsule", 17)
    assert (
        report.changed and "HTB{t3h_FuTUr3_15_bR1ghT_1_H0p3_y0uR3_W34r1nG_5h4d35!}" in report.text
    )


@pytest.mark.parametrize(
    ("command", "own"),
    [
        ("python reproduce.py", True),
        ("cd /testbed && python3 test_fix.py 2>&1", True),
        ('python -c "print(1)"', True),
        ("./exploit", True),
        ("python -m pytest tests/test_x.py", False),
        ("cd /testbed && python manage.py test", False),
        ("pip install -e .", False),
        ("grep -n foo bar.py", False),
    ],
)
def test_own_scripts_are_told_from_test_runners(command: str, own: bool) -> None:
    assert runs_own_script({"command": command}) is own


def test_test_logs_still_keep_failures_and_summaries() -> None:
    path = TOOL_OUTPUTS / "test_logs" / "swebench_eval__django__django-11564.txt"
    text = path.read_text()
    report = shorten(text)
    assert report.kind == "log" and report.tokens_after < 0.2 * report.tokens_before
    for line in text.split("\n"):
        if line.startswith(("FAIL:", "ERROR:")) or re.match(r"Ran \d+ tests", line):
            assert line in report.text


@pytest.mark.parametrize(
    ("source", "name"),
    [("entire_claude_code", "32f95fca3df2_0"), ("entire_opencode_pi", "93Dszf5mqrcKTj")],
)
def test_a_sub_agents_report_in_a_real_session_stays_whole(source: str, name: str) -> None:
    """Claude Code's and OpenCode's ``Task``: the report (12-17k characters of findings with
    file lines) is what the agent delegated the reading for; it lost references when cut."""
    text, report = _run(source, name, 2)
    assert "subagent_type" in _result(source, name, 2)[1]
    assert report.text == text


def test_a_background_agents_report_fetched_by_its_id_stays_whole() -> None:
    """Claude Code's ``TaskOutput(task_id, block, timeout)`` once the agent is done: its
    report, 12k characters, is a record the agent fetched (a shell's log so fetched is cut as
    a log: ``tests/shorten/test_calls.py``)."""
    text, report = _run("entire_claude_code", "f810e13fce67_0", 35)
    assert "<status>completed</status>" in text and "local_agent" in text
    assert report.text == text


def test_a_directive_fetched_by_its_id_in_a_real_session_stays_whole() -> None:
    """An MCP server's ``directive_get(id=...)``: a JSON record whose body is the directive
    the agent then follows; cut to its headings it lost the references the agent used."""
    text, report = _run("openagents_claude_code", "105911-call-issue-ready-now-to", 4)
    assert _result("openagents_claude_code", "105911-call-issue-ready-now-to", 4)[1] == {
        "id": "d-016"
    }
    assert estimate_tokens(text) > ShortenSettings().json_keep_tokens  # else kept anyway
    assert report.text == text
