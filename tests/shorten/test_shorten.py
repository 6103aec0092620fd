"""The shortening core: logs, similar lines, code, diffs, JSON, markers and real tool outputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.data import TOOL_OUTPUTS, shared_params
from tokenlean import ShortenReport, ShortenSettings, shorten
from tokenlean.shorten import Retrieval, error_lines
from tokenlean.shorten._seen import Seen
from tokenlean.shorten._text import estimate_tokens

HINT = Retrieval("o1a2b3", "read_original")
# the first marker of a text names the retrieval call; later ones only their lines
MARKER = re.compile(
    r"\[\.\.\. (\d+) ([^\]]*?) omitted"
    r"(?:; read_original\(\"o1a2b3\", \"(\d+)(?:-(\d+))?\"\)| \((\d+)(?:-(\d+))?\)) \.\.\.\]"
)


def _noise(n: int, start: int = 0) -> list[str]:
    return [
        f"step {i}: processed batch alpha_{i * 7 % 13} with value {i * 31 % 97}"
        for i in range(start, start + n)
    ]


def _marked_lines(report: ShortenReport) -> int:
    return sum(int(m.group(1)) for m in MARKER.finditer(report.text))


def test_a_log_keeps_errors_traceback_summary_and_exit_code() -> None:
    lines = [
        "<returncode>1</returncode>",
        "<output>",
        *_noise(120),
        "Traceback (most recent call last):",
        '  File "/app/run.py", line 12, in <module>',
        "    main()",
        "    ^^^^^^",
        '  File "/usr/lib/python3.11/site-packages/lib/core.py", line 88, in call',
        "    return impl(x)",
        "             ^^^^^^^",
        '  File "/app/jobs.py", line 40, in impl',
        "    raise ValueError(f'bad batch {x}')",
        "    ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "ValueError: bad batch 17",
        *_noise(120, 120),
        "=========== 1 failed, 41 passed in 2.31s ===========",
        "</output>",
    ]
    text = "\n".join(lines)
    report = shorten(text, retrieval=HINT)
    out = report.text.split("\n")
    for must in (lines[0], lines[122], lines[123], lines[124], lines[129], lines[130], lines[132]):
        assert must in out
    assert "=========== 1 failed, 41 passed in 2.31s ===========" in out
    assert out[-1] == "</output>"
    assert "^^^^^^^" not in report.text and "caret lines (^^^) omitted" in report.text
    assert report.kind == "log" and report.changed
    assert report.tokens_after < report.tokens_before
    # every omission is marked with how many lines went and how to read them back
    assert _marked_lines(report) == sum(o.count for o in report.omissions if o.reason != "caret")


def test_pytests_short_traceback_keeps_its_frames() -> None:
    """A conftest that fails to import is reported with pytest's short frames (``path:line: in
    name`` over the code line): the frames say where the error is, as Python's ``File "..."``
    frames do, and stay (a Codex session lost ``src/risk/risk_manager.py`` to this cut)."""
    frames = [
        "tests/conftest.py:81: in <module>",
        "    from src.risk.risk_manager import RiskParameters",
        "src/risk/__init__.py:1: in <module>",
        "    from .risk_manager import RiskManager, RiskParameters",
        "src/risk/risk_manager.py:27: in <module>",
        "    class RiskParameters:",
        "src/risk/risk_manager.py:42: in RiskParameters",
        "    partial_exit_targets: list[float] | None = None",
    ]
    lines = [
        *_noise(60),
        "ImportError while loading conftest '/repo/tests/conftest.py'.",
        *frames,
        "E   TypeError: unsupported operand type(s) for |: 'types.GenericAlias' and 'NoneType'",
        *_noise(60, 60),
    ]
    report = shorten("\n".join(lines), retrieval=HINT)
    assert report.kind == "log" and report.changed
    out = report.text.split("\n")
    assert all(line in out for line in frames)


def test_a_frame_every_traceback_repeats_is_key_once() -> None:
    """Seventeen test modules that fail to import each show importlib's frame, then their own:
    their own frames stay, importlib's is key the first time only."""
    library = "/usr/lib/python3.10/importlib/__init__.py:126: in import_module"
    lines = ["==================== ERRORS ===================="]
    for i in range(17):
        lines += [
            f"_______ ERROR collecting tests/test_mod_{i}.py _______",
            "Traceback:",
            library,
            "    return _bootstrap._gcd_import(name[level:], package, level)",
            f"tests/test_mod_{i}.py:{i + 1}: in <module>",
            f"    from pkg.core.part_{i} import build_{i}",
            "E   ModuleNotFoundError: No module named 'pkg'",
        ]
    lines += [*_noise(80), "17 errors in 0.35s"]
    report = shorten("\n".join(lines), retrieval=HINT)
    out = report.text.split("\n")
    assert all(f"tests/test_mod_{i}.py:{i + 1}: in <module>" in out for i in range(17))
    assert all(f"    from pkg.core.part_{i} import build_{i}" in out for i in range(17))
    assert 1 <= out.count(library) < 17


def test_markers_name_the_omitted_lines_and_the_way_back() -> None:
    noise = _noise(400)
    text = "\n".join(line if i % 80 else f"ERROR: case {i}" for i, line in enumerate(noise))
    report = shorten(text, max_tokens=100, retrieval=HINT)
    original = text.split("\n")
    markers = list(MARKER.finditer(report.text))
    assert len(markers) > 1 and markers[0].group(3) is not None  # the first names the call
    assert all(m.group(5) is not None for m in markers[1:])  # the others only their lines
    for match in markers:
        count, first = int(match.group(1)), int(match.group(3) or match.group(5))
        last = int(match.group(4) or match.group(6) or first)
        assert last - first + 1 == count
        assert original[first - 1] not in report.text.split("\n")
    assert shorten(text, max_tokens=100).text.count("(input lines ") >= 1  # no store: line numbers
    kept = shorten(text, max_tokens=100, retrieval=Retrieval("o9")).text
    assert "(output lines " in kept and 'of "o9")' in kept


def test_similar_lines_collapse_but_query_and_error_lines_survive() -> None:
    downloads = [f"Downloading package-{i} ({i % 50 + 3} kB)" for i in range(1, 200)]
    downloads[100] = "Downloading package-requests (77 kB)"  # matches the query
    downloads[150] = "Downloading package-151 (9 kB) error: checksum mismatch"
    text = "\n".join(["Collecting packages", *downloads, "Successfully installed 199 packages"])
    report = shorten(text, query="pip install requests", max_tokens=10_000)
    out = report.text.split("\n")
    assert downloads[100] in out and downloads[150] in out
    assert downloads[0] in out and downloads[-1] in out
    assert "similar lines omitted" in report.text
    assert {o.reason for o in report.omissions} == {"similar"}
    assert len(out) < 20


def test_similarity_compares_whole_lines_not_a_prefix() -> None:
    base = "/very/long/shared/path/to/the/project/source/tree/module/"
    lines = [
        f"{base}{name}.py: {msg}"
        for name, msg in [
            ("alpha", "imports sorted"),
            ("beta", "unused variable x"),
            ("gamma", "line too long"),
            ("delta", "missing docstring"),
            ("epsilon", "shadowed builtin"),
            ("zeta", "bare except"),
        ]
    ]
    report = shorten("\n".join(lines * 3), max_tokens=10_000)
    assert report.text == "\n".join(lines * 3)  # nothing merged: the lines differ after the path


def test_exact_repeats_of_an_error_line_collapse_and_the_line_stays() -> None:
    error = "ERROR: connection refused (db:5432)"
    text = "\n".join(["starting", *([error] * 300), "giving up"])
    report = shorten(text)
    assert report.text.split("\n") == [
        "starting",
        error,
        report.text.split("\n")[2],
        error,
        "giving up",
    ]
    assert "repeats of the line above omitted" in report.text


def test_code_keeps_outline_and_query_region_and_drops_prose_first() -> None:
    body = []
    for k in range(12):
        body += [
            f"    def method_{k}(self, value):",
            '        """',
            f"        Explain at length what method {k} does and why it matters here.",
            '        """',
            f"        result = self.helper_{k}(value) + {k}",
            f"        return self.finish_{k}(result)",
            "",
        ]
    body[5 * 7 + 4] = "        result = self.compute_order_by(value)"
    text = "\n".join(["class Service:", *body])
    report = shorten(text, query={"command": "grep -n compute_order_by service.py"}, retrieval=HINT)
    out = report.text.split("\n")
    assert report.kind == "code"
    assert all(f"    def method_{k}(self, value):" in out for k in range(12))
    assert "        result = self.compute_order_by(value)" in out
    prose = [line for line in out if "Explain at length" in line]
    code = [line for line in out if "self.helper_" in line or "self.finish_" in line]
    assert len(prose) < len(code)


def test_diffs_keep_headers_and_changes() -> None:
    hunk = [f" context line {i}" for i in range(30)]
    text = "\n".join(
        [
            "diff --git a/x.py b/x.py",
            "index 1..2 100644",
            "--- a/x.py",
            "+++ b/x.py",
            "@@ -1,40 +1,40 @@",
            *hunk[:15],
            "-old = compute(1)",
            "+new = compute(2)",
            *hunk[15:],
        ]
    )
    options = ShortenSettings(max_tokens=20, code_max_tokens=100, code_keep_percent=10)
    report = shorten(text, options=options)
    out = report.text.split("\n")
    assert report.kind == "diff" and report.changed
    for line in (
        "diff --git a/x.py b/x.py",
        "@@ -1,40 +1,40 @@",
        "-old = compute(1)",
        "+new = compute(2)",
    ):
        assert line in out


def test_lines_already_seen_point_back_but_errors_do_not() -> None:
    shown = _noise(40)
    text = "\n".join(["rerun:", *shown[:30], "AssertionError: expected 3, got 4", *shown[30:]])
    seen = {line.strip() for line in shown}
    report = shorten(text, seen=seen, max_tokens=10_000, retrieval=HINT)
    out = report.text.split("\n")
    assert "AssertionError: expected 3, got 4" in out
    assert "lines already shown earlier omitted" in report.text
    assert {o.reason for o in report.omissions} == {"seen"}
    assert not any(line in out for line in shown)


def test_lines_a_seen_parent_holds_count_as_shown() -> None:
    """First-sight shortening passes a ``Seen`` whose parent holds the earlier messages' lines:
    those lines are shown as much as the call's own."""
    shown = _noise(40)
    earlier = Seen()
    earlier.add("\n".join(shown))
    text = "\n".join(["rerun:", *shown, "AssertionError: expected 3, got 4"])
    own = shorten(text, seen=earlier, max_tokens=10_000, retrieval=HINT)
    inherited = shorten(text, seen=Seen(parent=earlier), max_tokens=10_000, retrieval=HINT)
    assert "lines already shown earlier omitted" in own.text
    assert inherited.text == own.text


def test_json_arrays_are_crushed_and_stay_valid() -> None:
    items = [{"id": i, "name": f"item-{i}", "state": "ok", "tags": ["a", "b"]} for i in range(60)]
    items[17]["state"] = "failed"
    items[33] = {"id": 33, "name": "item-33", "state": "ok", "tags": [], "extra": {"note": "odd"}}
    items[41]["name"] = "needle-in-haystack"
    text = json.dumps({"total": 60, "items": items}, indent=2)
    report = shorten(text, query="needle", max_tokens=1000, retrieval=HINT)
    data = json.loads(report.text)
    kept = [x for x in data["items"] if isinstance(x, dict)]
    markers = [x for x in data["items"] if isinstance(x, str)]
    assert report.kind == "json" and data["total"] == 60
    head = [x["id"] for x in kept if x["id"] not in (17, 33, 41, 59)]
    assert head == list(range(len(head))) and len(head) >= 8  # as many rows as the budget holds
    assert {17, 33, 41, 59} <= {x["id"] for x in kept}  # error, outlier, query, last
    assert report.tokens_after <= report.tokens_before / 2  # text_keep_percent of it, at most
    assert sum(int(m.split()[1]) for m in markers) == 60 - len(kept)
    assert min(int(m.split()[1]) for m in markers) > 1  # one item is kept, not marked
    assert 'read_original("o1a2b3")' in markers[0]  # the first says how to get items back
    assert report.text.startswith("{\n  ")  # the input's layout is kept
    tighter = ShortenSettings(json_keep_tokens=50, text_keep_percent=5)
    tight = json.loads(shorten(text, query="needle", options=tighter).text)  # valid, same keys
    assert [x["id"] for x in tight["items"] if isinstance(x, dict)] == [0, 17, 33, 41, 59]


def test_a_query_result_keeps_as_many_rows_as_its_budget_holds() -> None:
    """Rows an agent asked for (a SQL result as JSON records) are not cut to the two of the
    mildest cut when half of the result may stay: up to 64 head rows, the rest marked."""
    rows = [{"id": i, "customer": f"cust_{i}", "total": i * 1.5} for i in range(300)]
    report = shorten(json.dumps(rows), query={"sql": "SELECT * FROM orders"}, retrieval=HINT)
    data = json.loads(report.text)
    kept = [x["id"] for x in data if isinstance(x, dict)]
    assert kept == [*range(64), 299]
    assert "235 similar items omitted" in data[64] and 'read_original("o1a2b3")' in data[64]
    wide = [{"id": i, "text": f"row {i} " + "lorem ipsum dolor " * 12} for i in range(30)]
    report = shorten(json.dumps(wide))
    kept = [x["id"] for x in json.loads(report.text) if isinstance(x, dict)]
    assert 8 <= len(kept) - 1 < 30 and kept[-1] == 29  # wide rows: fewer, within the budget
    assert report.tokens_after <= report.tokens_before / 2


def test_long_strings_in_json_are_cut_inside_the_string() -> None:
    text = json.dumps({"log": "x" * 5000, "ok": True})
    data = json.loads(shorten(text).text)
    assert data["ok"] is True and data["log"].endswith("chars omitted]")
    kept = json.loads(shorten(text, retrieval=HINT).text)["log"]
    assert kept.endswith('chars omitted; read_original("o1a2b3")]')
    assert len(data["log"]) < 2000  # cut first at four times json_max_string
    tighter = ShortenSettings(json_keep_tokens=50, text_keep_percent=5)
    tight = json.loads(shorten(text, options=tighter).text)["log"]
    assert len(tight) < 600


def test_a_10mb_single_line_finishes_and_keeps_query_windows() -> None:
    line = ("abc " * 2_500_000) + "NEEDLE_MARK" + (" xyz" * 100_000)
    report = shorten(line, query="NEEDLE_MARK")
    assert len(report.text) < 5_000 and "NEEDLE_MARK" in report.text
    assert report.omissions[0].reason == "long-line" and report.omissions[0].unit == "chars"


def test_a_million_short_lines_finish() -> None:
    text = "\n".join(f"ok {i}" for i in range(1_000_000))
    report = shorten(text)
    assert report.tokens_after < 2_000 and report.text.startswith("ok 0")


def test_short_text_passes_through_unchanged() -> None:
    report = shorten("hello\nworld")
    assert report.text == "hello\nworld" and not report.changed and report.tokens_saved == 0


def test_bad_settings_raise_value_errors() -> None:
    with pytest.raises(ValueError, match="kind"):
        shorten("x", kind="yaml")  # type: ignore[arg-type]  # the point of the test
    with pytest.raises(ValueError, match="max_tokens"):
        shorten("x", max_tokens=0)
    with pytest.raises(ValueError, match="code_keep_percent"):
        ShortenSettings(code_keep_percent=120)
    with pytest.raises(ValueError, match="similar_run"):
        ShortenSettings(similar_run=2)


def _tool_outputs() -> list[Path]:
    return sorted(p for p in TOOL_OUTPUTS.glob("*/*") if p.name != "index.json")


@pytest.mark.parametrize("path", shared_params(_tool_outputs()), ids=lambda p: p.name)
def test_real_tool_outputs_shrink_and_keep_every_error_line(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    report = shorten(text)
    assert len(report.text) <= len(text)
    assert report.tokens_after <= report.tokens_before
    assert estimate_tokens(report.text) <= estimate_tokens(text)
    if report.kind == "json":
        json.loads(report.text)
        return
    out = set(report.text.split("\n"))
    items = text.split("\n")
    for index in error_lines(text):
        if len(items[index]) <= ShortenSettings().long_line_chars:
            assert items[index] in out
