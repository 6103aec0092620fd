"""Huge texts are cut to windows first: what is kept, and that every marker is right."""

from __future__ import annotations

import json
import re

import pytest

from tokenlean import _estimate, shorten
from tokenlean.shorten import Retrieval
from tokenlean.shorten._huge import GAP, windowed
from tokenlean.shorten._options import ShortenSettings
from tokenlean.tokens import EstimateCounter

#: A low threshold, so small inputs take the path a 50 MB output takes.
SMALL = ShortenSettings(window_above_chars=20_000, window_errors=5)
WHERE = Retrieval("o1", "read_original")
_MARKER = re.compile(r"^\s*\[\.\.\. (\d+) .*omitted")
_SPAN = re.compile(r'(?:read_original\("o1", "|\()(\d+)(?:-(\d+))?(?:"\)|\))')
_INLINE = re.compile(r" \[\.\.\. (\d+) chars omitted[^\]]*\.\.\.\] ")


def _log(n: int, errors: dict[int, str]) -> list[str]:
    lines = [f"tests/test_mod.py::test_case_{i} PASSED [{i % 100:3d}%]" for i in range(n)]
    for i, line in errors.items():
        lines[i] = line
    return lines


def _walk(original: list[str], shortened: str) -> None:
    """Every kept line is the original line at its place, and every marker names the lines it
    stands for: together they cover the original exactly once, in order."""
    at = 0  # 0-based: the next original line
    for line in shortened.split("\n"):
        marker = _MARKER.match(line)
        if marker is None:
            assert line == original[at], f"line {at + 1}"
            at += 1
            continue
        count = int(marker.group(1))
        span = _SPAN.search(line)
        if span is not None:
            first = int(span.group(1))
            last = int(span.group(2) or first)
            assert (first, last) == (at + 1, at + count), line
        at += count
    assert at == len(original)


def test_markers_count_the_whole_texts_lines() -> None:
    errors = {i: f"ValueError: bad input {i}" for i in (3, 50, 51, 700, 2_500, 4_990, 4_998)}
    original = _log(5_000, errors)
    report = shorten("\n".join(original), retrieval=WHERE, options=SMALL)
    assert report.changed and GAP not in report.text
    _walk(original, report.text)
    assert sum(o.count for o in report.omissions) == 5_000 - len(report.text.split("\n")) + len(
        report.omissions
    )


def test_an_error_in_the_middle_is_found() -> None:
    original = _log(8_000, {4_000: "RuntimeError: disk full on /dev/sda1"})
    report = shorten("\n".join(original), retrieval=WHERE, options=SMALL)
    assert "RuntimeError: disk full on /dev/sda1" in report.text
    _walk(original, report.text)


def test_first_and_last_errors_stay_and_the_rest_is_bounded() -> None:
    original = [f"ERROR: job {i} failed with code {i % 7}" for i in range(50_000)]
    report = shorten("\n".join(original), retrieval=WHERE, options=SMALL)
    assert original[0] in report.text and original[-1] in report.text
    # every line is an error, and the first and last few windows of them are all that is kept
    assert len(report.text) < 30_000
    _walk(original, report.text)


def test_query_matches_near_the_ends_are_kept() -> None:
    original = _log(6_000, {10: "collected 6000 items", 5_990: "compute_total returned 17"})
    report = shorten("\n".join(original), query="compute_total", retrieval=WHERE, options=SMALL)
    assert "compute_total returned 17" in report.text
    _walk(original, report.text)


@pytest.mark.parametrize(("lines", "items"), [(1, 12_000), (3, 12_000), (300, 1_700)])
def test_very_long_lines_lose_their_middle_counted(lines: int, items: int) -> None:
    row = "".join(f"v{i}={i * 3}; " for i in range(items))
    middle = len(row) // 2
    original = [f"row {k}: {row}" for k in range(lines)]
    original[-1] = f"row {lines - 1}: {row[:middle]} needle_mark {row[middle:]}"
    text = "\n".join(original)
    report = shorten(text, query="needle_mark", retrieval=WHERE, options=SMALL)
    assert report.changed and "needle_mark" in report.text
    shown = [line for line in report.text.split("\n") if not _MARKER.match(line)]
    for line in shown:
        k = int(line.split(":", 1)[0].removeprefix("row "))
        parts = _INLINE.split(line)
        kept, gone = "".join(parts[0::2]), sum(map(int, parts[1::2]))
        assert len(kept) + gone == len(original[k])
        assert original[k].startswith(parts[0]) and original[k].endswith(parts[-1])


def test_below_the_threshold_nothing_is_cut() -> None:
    text = "\n".join(_log(5_000, {}))
    assert windowed(text, [], ShortenSettings()) is None
    assert windowed(text, [], ShortenSettings(window_above_chars=len(text))) is None
    assert windowed(text, [], ShortenSettings(window_above_chars=len(text) - 1)) is not None


def test_estimate_of_a_huge_text_is_close_to_counting_all_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = (f"{i:6d}\tdef handler_{i}(event):  # retries {i % 5}, ok é" for i in range(120_000))
    text = "\n".join(rows)
    assert len(text) > _estimate._SAMPLE_ABOVE
    sampled = EstimateCounter().count(text)
    monkeypatch.setattr(_estimate, "_SAMPLE_ABOVE", len(text))
    whole = EstimateCounter().count(text)
    assert abs(sampled / whole - 1) < 0.03


def test_a_huge_json_array_keeps_notable_items_near_its_ends() -> None:
    items: list[dict[str, object]] = [{"id": i, "status": "ok"} for i in range(60_000)]
    for i in (100, 59_900):
        items[i] = {"id": i, "status": "failed"}
    report = shorten(json.dumps(items), retrieval=WHERE)
    kept = json.loads(report.text)
    assert {"id": 100, "status": "failed"} in kept and {"id": 59_900, "status": "failed"} in kept
    markers = [x for x in kept if isinstance(x, str)]
    dropped = sum(int(x.split()[1]) for x in markers)
    assert dropped + len(kept) - len(markers) == 60_000
    assert "and" in markers[0] and "more" in markers[0]  # names the first ids, counts the rest
