"""Worst-case inputs: every public text function, and every regex behind it, stays linear.

Two kinds of tests:

- Hang guards. Each worst-case input (a long run of spaces or tabs without a newline, a 10 MB
  line, a million short lines, a near-match of each pattern repeated until a super-linear scan
  would take hours, lone surrogates) goes through every public text function in a forked child
  process. A function that spends more than ``GUARD_SECONDS`` of CPU time on one input fails
  the test, named. The limit is a guard against hangs, not a speed assertion: linear code
  spends seconds at most here.
- Same results. The patterns rewritten to be linear are checked against their original,
  backtracking forms on random inputs (hypothesis), so only their cost changed.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import re
import signal
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

from tests.data import TOKENIZERS
from tokenlean import _estimate
from tokenlean.context_editor import ContextEditorSettings, RequestView, plan_clearing
from tokenlean.loop_guard._canonical import canonical_text
from tokenlean.loop_guard._detect import detect_stuck, loop_signals
from tokenlean.loop_guard._keys import is_failure, step_key
from tokenlean.loop_guard._signals import _PHRASES, thought_hedge
from tokenlean.loop_guard._step import Step
from tokenlean.replay._refs import extract_refs
from tokenlean.shorten import error_lines, query_terms, shorten
from tokenlean.shorten._firstsight import plan_first_sight
from tokenlean.shorten._inputs import InputShorteningSettings, shorten_arguments
from tokenlean.shorten._options import DEFAULT_OPTIONS, ShortenSettings
from tokenlean.shorten._output_settings import OutputShorteningSettings
from tokenlean.shorten._seen import Seen
from tokenlean.shorten._similar import shapes
from tokenlean.shorten._summaries import SUMMARY_COUNT, is_summary
from tokenlean.shorten._text import Lines, estimate_tokens
from tokenlean.store import excerpt
from tokenlean.token_saving._anthropic_classifier import parse_keep_indices
from tokenlean.token_saving._entries import build_entry
from tokenlean.token_saving._head_tail import compress_tool_output, content_digest
from tokenlean.token_saving._policy import CompressionSettings, Stage
from tokenlean.token_saving._words import compress_words, heuristic_classifier
from tokenlean.tokens import EstimateCounter, TiktokenCounter, count_request
from tokenlean.transcript import Message, ToolCall, canonical

#: CPU seconds one function may spend on one input. Linear code spends a few at most; the
#: quadratic ``\s*\n`` of the old token estimate spent minutes on 500,000 spaces.
GUARD_SECONDS = 60.0
MB = 1_000_000

# -- worst-case inputs ---------------------------------------------------------------------------


def _ten_mb_line() -> str:
    unit = (
        "ERROR 2024-01-02T03:04:05Z pid=4242 tmp_ab12cd34 0x7f3a2b1c build/lib/x.py:88 took 1.5s; "
    )
    return (unit * (10 * MB // len(unit) + 1))[: 10 * MB]


def _million_lines() -> str:
    return "\n".join(f"ok {i} passed" if i % 1000 else f"E   assert {i}" for i in range(1_000_000))


#: name -> builder (called in the child, so big inputs are never pickled or kept around)
INPUTS: dict[str, Callable[[], str]] = {
    # 500,000: the old quadratic token estimate spent about 4 CPU minutes on it (37 s on 200k)
    "500k spaces, no newline": lambda: "start" + " " * 500_000 + "end",
    "500k tabs": lambda: "\t" * 500_000,
    "200k unicode spaces": lambda: "\u00a0\u2003" * 100_000 + "z",
    "spaces before newlines": lambda: (" " * 5_000 + "\n") * 40,
    "10 MB line": _ten_mb_line,
    "1,000,000 short lines": _million_lines,
    "one 1 MB word": lambda: "a" * MB,
    "one 1 MB number": lambda: "1" * MB,
    "lone surrogates": lambda: "bad \ud800 text \udfff \ud83d\n" * 50_000,
    # near-matches: a pattern's start repeated, or its start then a long run it cannot finish
    "pytest-of- repeated": lambda: "pytest-of-" * 100_000,
    "'run' repeated in one word": lambda: "run" * 333_334 + " agai",
    "'retry' repeated": lambda: "retry" * 200_000 + " it agai",
    "digits then no summary": lambda: ("1" * 299 + " x passed\n") * 3_000,
    "pid then spaces": lambda: "pid" + " " * 200_000 + "x",
    "job then spaces": lambda: "[1]" + " " * 200_000 + "x",
    "month then spaces": lambda: "Jan" + " " * 200_000 + "x",
    "time then fraction": lambda: "12:34:56." + "1" * 500_000 + "x",
    "epoch then fraction": lambda: "1500000000." + "1" * 500_000 + "x",
    "hex run": lambda: "0x" + "a" * 500_000 + "g",
    "hex words": lambda: "abc1def " * 100_000,
    "uuid prefixes": lambda: "12345678-1234-1234-1234-" * 40_000,
    "tmp then letters": lambda: "tmp_" + "a" * 500_000,
    "temp dir then letters": lambda: "/var/folders/" + "a" * 500_000,
    "capital word then Erro": lambda: "A" + "a" * 500_000 + "Erro",
    "frame then quote": lambda: 'File "' + "a" * 500_000,
    "returncode then spaces": lambda: "<returncode>" + " " * 200_000 + "x",
    "open brackets": lambda: "[" * 500_000,
    "dotted digits": lambda: "1." * 250_000,
    "indented lines": lambda: ("\n" + " " * 100) * 10_000,
    "numbered code lines": lambda: "".join(f"{i:6d}\t    x = {i}\n" for i in range(100_000)),
}


#: The inputs that take a minute or more of CPU through every function (marked slow).
_BIG = frozenset({"10 MB line", "1,000,000 short lines"})


#: Every input is cut to windows first, as a huge one is (see tokenlean.shorten._huge).
_WINDOWED = ShortenSettings(window_above_chars=1000)


def _step(text: str, index: int = 0) -> Step:
    return Step(
        step_index=index,
        action="bash",
        action_input={"command": "pytest -x"},
        thought=text,
        observation=text,
        is_error=False,
    )


def _view(text: str) -> list[Message]:
    call = ToolCall("c1", "bash", {"command": "grep -rn pytest-of src"})
    return [
        Message("user", "find the failing test"),
        Message("assistant", "looking", id="a1", tool_calls=(call,)),
        Message("tool", text, id="t1", tool_call_id="c1", name="bash"),
    ]


def _seen(text: str) -> Seen:
    seen = Seen()
    seen.add(text[: len(text) // 2])
    return seen


def _functions() -> dict[str, Callable[[str], object]]:
    estimate = EstimateCounter()
    funcs: dict[str, Callable[[str], object]] = {
        "EstimateCounter.count": estimate.count,
        "count_request": lambda t: count_request(_view(t), estimate, system=t[:1000]),
        "estimate_tokens": estimate_tokens,
        "shorten": shorten,
        "shorten(log, query, seen, counter)": lambda t: shorten(
            t,
            kind="log",
            query={"command": "grep -n 'pid tmp' x.py"},
            seen=_seen(t),
            counter=estimate,
        ),
        "shorten(windowed)": lambda t: shorten(t, options=_WINDOWED),
        "shorten(log, windowed, query, seen)": lambda t: shorten(
            t, kind="log", query="pid tmp", seen=_seen(t), options=_WINDOWED
        ),
        "shorten(code)": lambda t: shorten(t, kind="code", query="def main"),
        "shorten(json)": lambda t: shorten(t, kind="json"),
        "shorten(json array)": lambda t: shorten(json.dumps(t.split("\n"))),
        "error_lines": error_lines,
        "is_summary per line": lambda t: [is_summary(line) for line in t.split("\n")],
        "query_terms": query_terms,
        "Lines.find_all": lambda t: Lines(t).find_all("error", lower=True),
        "shapes": shapes,
        "Seen.add": lambda t: Seen().add(t),
        "canonical_text": canonical_text,
        "step_key": lambda t: step_key(_step(t)),
        "is_failure": lambda t: is_failure(_step(t)),
        "detect_stuck": lambda t: detect_stuck([_step(t, i) for i in range(4)]),
        "loop_signals": lambda t: loop_signals([_step(t, i) for i in range(4)]),
        "thought_hedge": thought_hedge,
        "compress_words": lambda t: compress_words(t, heuristic_classifier),
        "compress_tool_output": compress_tool_output,
        "content_digest": content_digest,
        "build_entry": lambda t: build_entry(
            t, Stage(True, 0.3), CompressionSettings(classifier=heuristic_classifier), estimate
        ),
        "shorten_arguments": lambda t: shorten_arguments(
            "c1", {"script": t}, policy=InputShorteningSettings()
        ),
        "excerpt(pattern)": lambda t: excerpt(t, pattern="passed", context=2),
        "excerpt(lines)": lambda t: excerpt(t, lines="1-50"),
        "parse_keep_indices": lambda t: parse_keep_indices(t, 10),
        "extract_refs": extract_refs,
        "canonical(Message)": lambda t: canonical(_view(t)[2]),
        "plan_first_sight": lambda t: plan_first_sight(
            _view(t), OutputShorteningSettings(min_tokens=100, options=DEFAULT_OPTIONS)
        ),
        "plan_clearing": lambda t: plan_clearing(
            RequestView(tuple(_view(t) + _view("x")[1:])),
            config=ContextEditorSettings(
                mode="plain", trigger_tokens=10, keep=0, batch=1, min_saved_tokens=0
            ),
            previous={},
        ),
    }
    if (TOKENIZERS / "o200k_base.tiktoken").is_file():
        funcs["TiktokenCounter.count"] = TiktokenCounter("o200k_base", vocab_path=TOKENIZERS).count
    return funcs


# -- the hang guard ------------------------------------------------------------------------------


def _limit_cpu(seconds: float) -> None:
    """Have the kernel stop this process (SIGXCPU) once it spends ``seconds`` more CPU time:
    unlike a wall-clock timeout, it does not fire early on a machine busy with other work."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(used.ru_utime + used.ru_stime + seconds)
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _child(name: str, conn: Connection) -> None:
    text = INPUTS[name]()
    for label, func in _functions().items():
        _limit_cpu(GUARD_SECONDS)
        conn.send(("start", label))
        try:
            func(text)
        except Exception:
            conn.send(("error", f"{label} raised:\n{traceback.format_exc()}"))
    conn.send(("done", ""))


@pytest.mark.skipif(
    resource is None or "fork" not in multiprocessing.get_all_start_methods(),
    reason="needs fork and CPU-time limits (POSIX)",
)
@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in _BIG else n for n in INPUTS],
)
def test_no_text_function_hangs_or_raises(name: str) -> None:
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(name, send), daemon=True)
    child.start()
    send.close()
    current, errors = "building the input", []
    try:
        while True:
            # A wall-clock backstop, far above the CPU limit, for a child that hangs idle.
            if not receive.poll(10 * GUARD_SECONDS):
                pytest.fail(f"{current} did not finish on {name!r}")
            try:
                kind, detail = receive.recv()
            except EOFError:
                child.join()
                over = child.exitcode == -signal.SIGXCPU
                why = f"ran over {GUARD_SECONDS:.0f} CPU seconds" if over else "died"
                pytest.fail(f"{current} {why} on {name!r} (super-linear?); exit {child.exitcode}")
            if kind == "done":
                break
            if kind == "start":
                current = detail
            else:
                errors.append(detail)
    finally:
        if child.is_alive():
            child.kill()
        child.join()
    assert not errors, "\n".join(errors)


# -- same results as the original patterns -------------------------------------------------------

_OLD_ESTIMATE = {
    "word": r"[A-Za-z]+",
    "long_word_excess": r"(?<=[A-Za-z]{7})[A-Za-z]{5}",
    "digit_group": r"\d{1,3}",
    "digit_run": r"\d+",
    "punct": r"[^\sA-Za-z\d]",
    "punct_run": r"[^\sA-Za-z\d]+",
    "line_break": r"\s*\n",
    "indent": r"(?<=\n)[ \t]{2,}",
}


def _old_estimate(counter: EstimateCounter, text: str) -> int:
    """``EstimateCounter.count`` as it was: one ``re.findall`` per feature."""
    if not text:
        return 0
    total = 0.0
    for field, pattern in _OLD_ESTIMATE.items():
        total += getattr(counter, field) * len(re.findall(pattern, text))
    non_ascii = len(text) - len(re.findall(r"[\x00-\x7f]", text))
    return max(1, round(total + counter.non_ascii * non_ascii))


_EDGES = list("aZq09  \t\n\n\r\x0b\x1c.,;-_/'é中😀\u0660\u00a0\u2028\u3000\x85\ud800İ")
_edgy_text = st.lists(
    st.one_of(st.sampled_from(_EDGES), st.sampled_from(["abcdefghijkl", "12345678", "\n   "])),
    max_size=40,
).map("".join)
#: Weights that are distinct powers of ten, so each feature's count shows in the total.
_SEPARATE = EstimateCounter(1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(_edgy_text, st.sampled_from([3, 7, 1 << 16]))
@example("a" * 11 + " " + "b" * 12 + "\n  x" + "7" * 7, 1 << 16)
def test_estimate_counts_what_the_regexes_counted(text: str, chunk: int) -> None:
    original = _estimate._CHUNK_CHARS
    _estimate._CHUNK_CHARS = chunk  # tiny chunks put cuts everywhere they are allowed
    try:
        assert _SEPARATE.count(text) == _old_estimate(_SEPARATE, text)
        assert EstimateCounter().count(text) == _old_estimate(EstimateCounter(), text)
    finally:
        _estimate._CHUNK_CHARS = original


_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_OLD_VOLATILE = [
    (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I, "<uuid>"),
    (r"(?:/private)?/var/folders/[^/\s]+/[^/\s]+/T/", 0, "<tmpdir>/"),
    (r"pytest-of-[^/\s]+/pytest-\d+", 0, "pytest-of-<user>/pytest-<n>"),
    (r"\btmp[._]?(?=[A-Za-z_]*\d)[A-Za-z0-9_]{6,}", 0, "tmp<id>"),
    (
        r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?)?"
        r"(?:\s?(?:Z|UTC|[+-]\d{2}:?\d{2}))?",
        0,
        "<time>",
    ),
    (rf"\b{_MONTH}\s+\d{{1,2}}\s+(?:\d{{1,2}}:\d{{2}}|\d{{4}})\b", 0, "<time>"),
    (r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b", 0, "<time>"),
    (r"\b1[5-9]\d{8}(?:\.\d+|\d{3})?\b", 0, "<time>"),
    (r"\b\d+(?:\.\d+)?\s?(?:ms|us|µs|ns|s|secs?|seconds?)\b", 0, "<duration>"),
    (r"\b(pid|process|thread)(\s*[=:#]?\s*)\d+", re.I, r"\1\2<pid>"),
    (r"/proc/\d+", 0, "/proc/<pid>"),
    (r"^\[\d+\]\s+\d+$", re.M, "[<job>] <pid>"),
    (r"\b0x[0-9a-f]+\b", re.I, "0x<hex>"),
    (r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,}\b", re.I, "<hex>"),
]


def _old_canonical(text: str) -> str:
    for pattern, flags, replacement in _OLD_VOLATILE:
        text = re.sub(pattern, replacement, text, flags=flags)
    return " ".join(text.split())


_VOLATILE_PIECES = [
    "123e4567-e89b-12d3-a456-426614174000", "ABCDEF01-", "-e89b", "x", "é", "_", "-", ".",
    "/private", "/var/folders/ab/cd/T/", "/var/folders/", "pytest-of-", "root", "/pytest-12",
    "/", "tmp", "tmp.", "tmp_", "Ab12Cd", "2024-04-10", "T07:11:22", ".123", "Z", " UTC",
    "+02:00", "Oct", "October", " 24", "  2024", " 07:11", "10:15:03", "1712733082", ".5",
    "000", "12", "1", "3", "ms", "s", "seconds", " ", "\n", "\t", "pid", "PID", "process",
    "thread", "=", ":", "#", "/proc/77", "[1]", "0x", "0X7f", "3f9c2ab", "deadbeef", "a1",
    "İ", "ſ", "٣", "\r", "\x0b", "\n[", "PROCESS", "Thread", "DEADBEEF1", "1712733082123",
    "\x1c", "µs", "Subprocess",
]  # fmt: skip
_volatile_text = st.lists(st.sampled_from(_VOLATILE_PIECES), max_size=30).map("".join)


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(_volatile_text)
@example("pytest-of-a/pytest-1pytest-of-b/pytest-2 pytest-of-pytest-of-x/pytest-3")
@example("xpid  =  12 thread#3 process 4 1500000000.25 0x1fz 123e4567-e89b-12d3-a456-426614174000")
def test_canonical_text_matches_the_original_patterns(text: str) -> None:
    canonical_text.cache_clear()
    assert canonical_text(text) == _old_canonical(text)


@given(_volatile_text)
def test_pytest_dirs_and_uuids_match_their_regexes(text: str) -> None:
    from tokenlean.loop_guard._canonical import _pytest_dirs, _uuids

    pytest_of, _, pytest_repl = _OLD_VOLATILE[2]
    assert _pytest_dirs(text) == re.sub(pytest_of, pytest_repl, text)
    uuid, flags, uuid_repl = _OLD_VOLATILE[0]
    assert _uuids(text) == re.sub(uuid, uuid_repl, text, flags=flags)


_OLD_RETRY = re.compile(r"(?:try|trying|run\w*) (?:it |this |that )?again", re.I)
_retry_text = st.lists(
    st.sampled_from(["run", "RUN", "try", "trying", "re", "x", "é", "ing", " ", "it ", "that ",
                     "again", "AGAIN", "_", "-", "\n"]),
    max_size=25,
).map("".join)  # fmt: skip


(_NEW_RETRY,) = [p for p, _ in _PHRASES if "run" in p.pattern and "again" in p.pattern]


@given(_retry_text)
@example("rerun it again")
@example("retrying again")
def test_retry_phrase_matches_its_original(text: str) -> None:
    assert (_NEW_RETRY.search(text) is None) == (_OLD_RETRY.search(text) is None)


_OLD_SUMMARY_COUNT = re.compile(
    r"\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|tests?"
    r"|problems?|issues?|violations?|files? (?:changed|checked|reformatted|left))\b"
)


@given(
    st.lists(
        st.sampled_from(["1", "23", "٣", " ", "passed", "passe", "files changed", "x", "tests"]),
        max_size=20,
    ).map("".join)
)
def test_summary_counts_match_the_original_pattern(line: str) -> None:
    assert (SUMMARY_COUNT.search(line) is None) == (_OLD_SUMMARY_COUNT.search(line) is None)


_LINE_BREAKERS = ["\n", "\r", "\r\n", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u2028"]


@given(
    st.lists(
        st.sampled_from([*_LINE_BREAKERS, " ", "\t", "\u00a0", "error: x", "fatal: y", "ok"]),
        max_size=12,
    ).map("".join)
)
def test_first_line_of_a_failure_is_found_as_before(observation: str) -> None:
    first = next((line.strip() for line in observation.splitlines() if line.strip()), "")
    old = re.match(
        r"^(?:error\b|[\w.]*(?:error|exception)\b:|traceback \(most recent call last\)|fatal:"
        r"|.*: command not found|.*: no such file or directory)",
        first,
        re.I,
    )
    assert is_failure(_step(observation)) == bool(old)


@given(st.text(alphabet=st.sampled_from(list("aBİΣσ中 \n")), max_size=30))
def test_lines_lower_keeps_offsets(text: str) -> None:
    lowered = Lines(text).lower()
    if "İ" not in text:
        assert lowered == text.lower()
    # As the per-character fallback it replaces had it ("İ" kept), but for a final sigma,
    # which str.lower() writes as a final sigma and a per-character lower as a medial one.
    per_char = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    assert len(lowered) == len(text)
    for char, new, old in zip(text, lowered, per_char, strict=True):
        assert new == old or (char == "Σ" and {new, old} == {"σ", "ς"})


@given(st.text(alphabet=st.sampled_from(list("ab \n\t\u00a0")), max_size=30), st.integers(0, 8))
def test_has_words_counts_like_split(text: str, n: int) -> None:
    from tokenlean.token_saving._entries import _has_words

    assert _has_words(text, n) == (len(text.split()) >= n)


_PIECES = [*"aZb09  \t\n\r.,/-é中😀\u00a0", "'s", "'re", " a", "\n1", "ab ", "\r\n", "\ud800"]


@pytest.mark.skipif(
    not (TOKENIZERS / "o200k_base.tiktoken").is_file(),
    reason="needs ../shared/tokenizers (the o200k_base and cl100k_base vocabularies)",
)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=40).map("".join),
    st.sampled_from(["o200k_base", "cl100k_base"]),
)
def test_exact_counts_in_pieces_add_up(text: str, encoding: Any) -> None:
    counter = TiktokenCounter(encoding, vocab_path=TOKENIZERS)
    whole = len(counter._encoding.encode_ordinary(text))
    original = _estimate._CHUNK_CHARS
    _estimate._CHUNK_CHARS = 2  # cut wherever a cut is allowed
    try:
        assert counter.count(text) == whole
    finally:
        _estimate._CHUNK_CHARS = original
