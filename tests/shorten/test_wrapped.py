"""Outputs wrapped in JSON are shortened by the text inside, and stay the envelope they were.

The samples (``samples/envelopes.json``) are real tool outputs: Codex CLI's older envelope as
recorded, and real texts inside the newer Codex envelope, an MCP result and a test harness's
JSON (each entry says where it comes from and how it was wrapped).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenlean import shorten
from tokenlean.shorten import Retrieval
from tokenlean.shorten._options import DEFAULT_OPTIONS
from tokenlean.shorten._reads import file_read, requested_lines
from tokenlean.shorten._wrapped import readable, unwrap
from tokenlean.store import excerpt

SAMPLES = Path(__file__).parent / "samples" / "envelopes.json"
HINT = Retrieval("o1a2b3", "read_original")
MARKER = re.compile(r"\[\.\.\. .* omitted.*\.\.\.\]")
SPAN = re.compile(r'read_original\("o1a2b3", "(\d+)-(\d+)"\)')
#: Every marker's lines: the first names the tool, later ones only their span.
ANY_SPAN = re.compile(r'omitted(?:; read_original\("o1a2b3", "| \()(\d+)-(\d+)')


@cache
def _samples() -> dict[str, dict[str, Any]]:
    data = json.loads(SAMPLES.read_text(encoding="utf-8"))
    return {sample["name"]: sample for sample in data["samples"]}


def _sample(name: str) -> dict[str, Any]:
    return _samples()[name]


def _shortened(name: str) -> tuple[str, str]:
    sample = _sample(name)
    report = shorten(sample["output"], query=sample["args"], retrieval=HINT)
    return sample["output"], report.text


def _kept_lines(text: str) -> set[str]:
    return {line for line in text.split("\n") if line.strip() and not MARKER.search(line)}


NAMES = sorted(_samples())


@pytest.mark.parametrize("name", NAMES)
def test_each_sample_is_recognised_as_an_envelope(name: str) -> None:
    wrapped = unwrap(_sample(name)["output"])
    assert wrapped is not None
    assert len(wrapped.body) > 0.5 * len(_sample(name)["output"]) / 1.2
    assert wrapped.wrap(wrapped.body) == _sample(name)["output"]  # round trip, byte for byte


@pytest.mark.parametrize("name", NAMES)
def test_the_result_is_the_same_envelope_with_its_other_fields_as_they_were(name: str) -> None:
    original, short = _shortened(name)
    before, after = unwrap(original), unwrap(short)
    assert before is not None and after is not None
    assert after.header == before.header
    old = _values(original[len(before.header) :])
    new = _values(short[len(after.header) :])  # valid JSON, or this raises
    assert _strip(new, after.body) == _strip(old, before.body)  # all but the body as it was
    assert len(short) <= len(original)


def _values(text: str) -> list[Any]:
    decoder, at, out = json.JSONDecoder(), 0, []
    text = text.strip()
    while at < len(text):
        value, at = decoder.raw_decode(text, at)
        out.append(value)
        while at < len(text) and text[at].isspace():
            at += 1
    return out


def _strip(value: Any, body: str) -> Any:
    """``value`` with every copy of ``body`` (either line ending) replaced by ``BODY``."""
    if isinstance(value, str):
        return "BODY" if value.replace("\r\n", "\n") == body else value
    if isinstance(value, list):
        return [_strip(item, body) for item in value]
    if isinstance(value, dict):
        return {key: _strip(item, body) for key, item in value.items()}
    return value


@pytest.mark.parametrize("name", NAMES)
def test_nothing_is_cut_that_the_text_unwrapped_would_keep(name: str) -> None:
    sample = _sample(name)
    original, short = _shortened(name)
    inner = unwrap(original)
    assert inner is not None
    alone = shorten(inner.body, query=sample["args"], retrieval=HINT).text
    result = unwrap(short)
    inside = result.body if result is not None else inner.body
    assert _kept_lines(inside) >= _kept_lines(alone)


def _page(name: str) -> bool:
    """The sample is source read a page at a time (kept as the whole file would be)."""
    span = requested_lines(_sample(name)["args"])
    return span is not None and span >= DEFAULT_OPTIONS.page_lines and name.endswith("code_read")


@pytest.mark.parametrize("name", [n for n in NAMES if _samples()[n]["later_used"] and not _page(n)])
def test_what_the_agent_used_later_survives(name: str) -> None:
    sample = _sample(name)
    _, short = _shortened(name)
    for reference in sample["later_used"]:
        assert reference in short, reference


def test_a_spec_file_read_was_cut_before_and_is_kept_now() -> None:
    """The recorded case: the agent printed a spec with ``sed -n '1,200p'`` and cited its
    requirement ids later; read as one JSON record, the spec lost them."""
    sample = _sample("codex_old_spec_read")
    assert file_read(sample["args"]) == "range"
    _, short = _shortened("codex_old_spec_read")
    assert short == sample["output"]  # a stretch the agent asked for: whole
    as_record = shorten(sample["output"], kind="json", retrieval=HINT).text
    assert not all(reference in as_record for reference in sample["later_used"])


def test_a_page_of_source_keeps_its_outline_and_every_cut_line_is_one_call_away() -> None:
    """The recorded case: Codex read a router with ``sed -n '1,200p'``, a page of a file read
    through, kept as ``cat`` keeps a file: its imports and signatures. What the agent used
    later and is cut (two attributes inside a function body) lies in a marked span that
    ``read_original`` returns; the trade, measured with each source held out, is in
    ``benchmarks/loso_reads.md``."""
    sample = _sample("codex_old_code_read")
    assert _page("codex_old_code_read")
    original, short = _shortened("codex_old_code_read")
    inner, kept = unwrap(original), unwrap(short)
    assert inner is not None and kept is not None and kept.body != inner.body
    signatures = [
        line for line in inner.body.split("\n") if line.startswith(("def ", "async def ", "@"))
    ]
    assert signatures and all(line in kept.body for line in signatures)
    spans = ANY_SPAN.findall(short)
    assert spans
    cut = "\n".join(excerpt(readable(original), lines=f"{a}-{b}") for a, b in spans)
    for reference in sample["later_used"]:
        assert reference in kept.body or reference in cut, reference


def test_a_search_inside_the_new_codex_envelope_keeps_its_header_and_fields() -> None:
    original, short = _shortened("codex_new_search")
    assert short.startswith("Script completed\nWall time 0.1 seconds\nOutput:\n\n{")
    record = json.loads(short.split("\n\n", 1)[1])
    assert list(record) == ["chunk_id", "wall_time_seconds", "exit_code", "original_token_count",
                            "output"]  # fmt: skip
    assert record["exit_code"] == 0 and record["chunk_id"] == "3f9a1c"
    assert len(short) <= len(original)


def test_the_harness_log_keeps_its_failure_and_stays_indented_json() -> None:
    original, short = _shortened("harness_test_log")
    assert short != original
    record = json.loads(short)
    assert record["returncode"] == 1 and record["stderr"] == ""
    assert "FAIL: test_migrate_with_existing_target_permission" in record["stdout"]
    assert "AssertionError: 'A problem arose migrating proxy model permissions'" in record["stdout"]
    assert short.startswith('{\n  "stdout": "')  # the indentation as it was
    assert short.endswith('"stderr": "",\n  "returncode": 1\n}')


def test_a_marker_names_the_lines_read_original_gives_back() -> None:
    """Markers count the lines of the text inside; a line range is read from the same lines."""
    original, short = _shortened("harness_test_log")
    body = json.loads(short)["stdout"]
    spans = [(int(a), int(b)) for a, b in SPAN.findall(body)]
    assert spans
    lines = json.loads(original)["stdout"].split("\n")
    first, last = spans[0]
    got = excerpt(readable(original), lines=f"{first}-{last}")
    assert got.split("\n")[0] == f"{first}: {lines[first - 1]}"
    assert got.split("\n")[-1] == f"{last}: {lines[last - 1]}"


def test_readable_is_the_header_and_the_text_inside() -> None:
    original = _sample("codex_new_search")["output"]
    text = readable(original)
    assert text.startswith("Script completed\nWall time 0.1 seconds\nOutput:\n\n")
    assert "\\n" not in text.split("\n", 5)[4]  # unescaped
    assert readable("plain text\nwith lines") == "plain text\nwith lines"


# -- edge cases ------------------------------------------------------------------------------


LOG = "\n".join(f"step {i}: processed item_{i} in {i % 7} ms" for i in range(400))


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"output": "one line only", "metadata": {"exit_code": 0}}),
        json.dumps({"items": [{"id": i, "name": f"n{i}\nx"} for i in range(200)]}),  # no body
        '{"output": "' + "a\\nb" * 10 + '"} trailing words',
        "{" * 5000 + "}" * 5000,  # deep: no envelope, no error
        json.dumps({"id": "d-4", "body": LOG, "issues": [1, 2]}),  # a record's own text field
        '{"output": "broken \\n',
        "Output:\n" + "\n" * 20 + json.dumps({"output": LOG}),  # header too long
        json.dumps({"output": LOG + "\nsrc/app.py"}).replace("/", "\\/"),  # escaped "/"
    ],
)
def test_what_is_no_envelope_is_left_to_the_other_kinds(text: str) -> None:
    assert unwrap(text) is None
    assert readable(text) == text


def test_a_json_string_crlf_and_escaped_non_ascii_round_trip() -> None:
    body = "\r\n".join(f"ligne {i}: café — naïve {i}" for i in range(300))
    for ascii_only in (True, False):
        text = json.dumps({"output": body, "metadata": {"exit_code": 1}}, ensure_ascii=ascii_only)
        wrapped = unwrap(text)
        assert wrapped is not None and wrapped.crlf and "\r" not in wrapped.body
        assert wrapped.wrap(wrapped.body) == text
        short = shorten(text, max_tokens=200).text
        assert short != text
        assert short.isascii() == ascii_only
        assert json.loads(short)["metadata"] == {"exit_code": 1}
        assert "\r\n" in json.loads(short)["output"]
    whole = json.dumps(LOG)  # the output is one JSON string
    assert unwrap(whole) is not None
    assert isinstance(json.loads(shorten(whole, max_tokens=200).text), str)


def test_several_values_and_a_repeated_body_are_one_envelope() -> None:
    first = json.dumps({"chunk_id": "a", "output": LOG, "aggregated_output": LOG})
    text = "Wall time 0.2 seconds\nOutput:\n" + first + "\n" + json.dumps({"chunk_id": "b"})
    short = shorten(text, max_tokens=300).text
    head, rest = short.split("\n", 2)[:2], short.split("\n", 2)[2]
    assert head == ["Wall time 0.2 seconds", "Output:"]
    one, two = _values(rest)
    assert one["output"] == one["aggregated_output"] != LOG
    assert two == {"chunk_id": "b"}


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.text(min_size=0, max_size=60), min_size=2, max_size=80),
    extra=st.dictionaries(
        st.text(min_size=1, max_size=8), st.one_of(st.integers(), st.text(max_size=10)),
        max_size=4,
    ),
    header=st.sampled_from(["", "Exit code: 0\nOutput:\n", "Wall time 1 seconds\nOutput:\n\n"]),
    ascii_only=st.booleans(),
)  # fmt: skip
def test_any_envelope_round_trips_and_stays_valid_json(
    lines: list[str], extra: dict[str, Any], header: str, ascii_only: bool
) -> None:
    body = "\n".join(lines)
    record = {**{k: v for k, v in extra.items() if k != "output"}, "output": body}
    text = header + json.dumps(record, ensure_ascii=ascii_only)
    wrapped = unwrap(text)
    if wrapped is not None:
        assert wrapped.wrap(wrapped.body) == text
    short = shorten(text, max_tokens=30).text
    assert short.startswith(header)
    parsed = json.loads(short[len(header) :])
    assert {k: v for k, v in parsed.items() if k != "output"} == {
        k: v for k, v in record.items() if k != "output"
    }
