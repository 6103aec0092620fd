"""Which lines of a log matter: errors, warnings, summaries, exit codes and traceback frames.

Each kind is found in two steps so the cost stays linear: ``str.find`` over the lower-cased
text for a few keywords picks candidate lines, then a small regex (no nested quantifiers)
confirms each candidate on at most its first :data:`SCAN_CHARS` characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tokenlean import checks
from tokenlean.shorten._summaries import summaries_among
from tokenlean.shorten._text import Lines

__all__ = [
    "KEY_LAST_FRAMES",
    "SCAN_CHARS",
    "LogMarks",
    "classify",
    "error_lines",
    "errors_in",
    "is_caret",
    "repeated_frames",
    "value_lines",
]

SCAN_CHARS = 2000
_ERROR = re.compile(
    r"\b(?:[A-Z]\w*)?(?:Error|Exception)\b"
    r"|\b(?:error|ERROR|FAIL|FAILED|FAILURE|Failed|Failure|failed|fatal|FATAL|panic|Traceback"
    r"|Aborted|Segmentation fault|Permission denied|No such file or directory"
    r"|command not found|cannot|Cannot|not found)\b"
    r"|^E {2,}\S|^<returncode>[1-9]|\b(?:exit (?:code|status)|returned non-zero)"
)
#: Keys that pick candidate lines, searched in the lower-cased text (one scan each).
_ERROR_KEYS = (
    "rror", "xception", "fail", "fatal", "panic", "traceback", "aborted", "segmentation fault",
    "permission denied", "no such file", "not found", "cannot", "exit code", "exit status",
    "non-zero",
)  # fmt: skip
_ERROR_KEYS_BUT_TRACEBACK = tuple(key for key in _ERROR_KEYS if key != "traceback")
_WARNING = re.compile(r"\b(?:[A-Z]\w*)?Warning\b|\b(?:warning|WARNING|WARN|Warn)\b")
_WARNING_KEYS = ("warn",)
#: Summaries are looked for among error and warning lines, the last lines, and these.
_SUMMARY_KEYS = (" passed",)
_TAIL_LINES = 40
#: A traceback frame: Python's (``File "a.py", line 3, in f``) or pytest's short one
#: (``src/a.py:42: in RiskParameters``, as a conftest that fails to import is reported).
_FRAME = re.compile(
    r'^\s*File "([^"\n]*)", line \d+|^([^\s:"][^:"\n]*\.py):\d+: in (?:<\w+>|[\w.]+)\s*$'
)
#: Keys that pick candidate frame lines (one scan each).
_FRAME_KEYS = ('File "', ".py:")
_LIBRARY = ("site-packages", "dist-packages", "/lib/python", "<frozen", "<string>")
_CARET_CHARS = frozenset("^~ \t")
_DIFF_HEADS = ("@@ ", "diff --git", "--- a/", "+++ b/")
#: The frames nearest the exception are always kept (with the first frame and the exception).
KEY_LAST_FRAMES = 3
#: ``FLAG{...}``, ``HTB{...}``, ``picoCTF{...}``: a value a script printed is the agent's answer.
_FLAG = re.compile(r"\b[A-Za-z][A-Za-z0-9_]{1,15}\{[^{}\s]{3,200}\}")
#: Words that introduce the value a script printed (looked for in the lower-cased text).
_VALUE_KEYS = (
    "expected", "actual", "result", "got ", "got:", "output", "returned", "answer", "value",
    "flag", "=", ": ",
)  # fmt: skip
_DIGIT = re.compile(r"\d")
_TRACE_HEAD = "Traceback (most recent call last)"
#: A caret check of one line costs about what scanning this many characters for ``^`` does.
_CHARS_PER_CARET_CHECK = 400
_MIN_REPEAT = 2  # frames lines: fewer cost less than the marker that stands for them


@dataclass
class LogMarks:
    """Line indices by role. ``ties`` maps a frame line to the code line that belongs to it.

    ``flags`` hold flag-like values (``FLAG{...}``, ``HTB{...}``); ``repeats`` maps each line of
    a traceback (or of its frames) that repeats an earlier one line for line to the first and
    last line (0-based) of the earlier copy (see :func:`repeated_frames`).

    Key frames are each traceback's first frame and the frames nearest its exception; the
    other frames are split into the project's and libraries' (``site-packages``, ``<frozen>``).
    """

    errors: set[int] = field(default_factory=set)
    warnings: set[int] = field(default_factory=set)
    summaries: set[int] = field(default_factory=set)
    key_frames: set[int] = field(default_factory=set)
    project_frames: set[int] = field(default_factory=set)
    other_frames: set[int] = field(default_factory=set)
    carets: set[int] = field(default_factory=set)
    diff_heads: set[int] = field(default_factory=set)
    diff_changes: set[int] = field(default_factory=set)
    diff_lines: int = 0
    ties: dict[int, int] = field(default_factory=dict)
    flags: set[int] = field(default_factory=set)
    repeats: dict[int, tuple[int, int]] = field(default_factory=dict)


def _candidates(lines: Lines, keys: tuple[str, ...]) -> set[int]:
    found: set[int] = set()
    for key in keys:
        found.update(lines.find_all(key, lower=True))
    return found


def _confirm(
    lines: Lines, candidates: set[int], pattern: re.Pattern[str], scan: int = SCAN_CHARS
) -> set[int]:
    items = lines.items
    return {i for i in candidates if pattern.search(items[i], 0, scan)}


def _error_candidates(lines: Lines, traced: list[int] | None = None) -> set[int]:
    """``traced``: the lines holding "traceback" in any case, when the caller found them."""
    if traced is None:
        found = _candidates(lines, _ERROR_KEYS)
    else:
        found = _candidates(lines, _ERROR_KEYS_BUT_TRACEBACK).union(traced)
    found |= {i + 1 for i in lines.find_all("\nE  ")}
    if lines.text.startswith(("E  ", "<returncode>")):
        found.add(0)
    return found


def error_lines(text: str) -> list[int]:
    """0-based indices of the lines of ``text`` that look like errors (exported for tests)."""
    return sorted(errors_in(Lines(checks.text(text, "text"))))


def errors_in(lines: Lines, traced: list[int] | None = None) -> set[int]:
    """The lines that look like errors (those of :func:`classify` too); ``traced``: the lines
    holding "traceback" in any case, when the caller found them."""
    return _confirm(lines, _error_candidates(lines, traced), _ERROR)


def _carets(lines: Lines, frames: set[int]) -> set[int]:
    """Caret lines within three lines under a frame (under its code line). The lines under a
    few frames are asked directly; under many (a long traceback), only those holding a ``^``
    or ``~`` are, so such a traceback costs no call per frame here."""
    below = {i + k for i in frames for k in (1, 2, 3)}
    if len(below) * _CHARS_PER_CARET_CHECK < len(lines.text):  # fewer checks than a scan costs
        items = lines.items
        return {i for i in below if i < len(items) and is_caret(items[i])}
    marked = set(lines.find_all("^")).union(lines.find_all("~")) if frames else set()
    return {i for i in below & marked if is_caret(lines.items[i])}


def is_caret(line: str) -> bool:
    """Python 3.11+ position markers (``^^^^``/``~~~``) under a traceback's code line."""
    stripped = line.strip()
    return len(stripped) >= 2 and stripped[0] in "^~" and _CARET_CHARS.issuperset(line)


def classify(lines: Lines) -> LogMarks:
    marks = LogMarks()
    warnings = _candidates(lines, _WARNING_KEYS)
    # the lines holding "traceback": error candidates, and among them every traceback's head
    traced = lines.find_all("traceback", lower=True)
    marks.errors = errors_in(lines, traced)
    marks.warnings = _confirm(lines, warnings, _WARNING) - marks.errors
    tail = set(range(max(0, lines.count - _TAIL_LINES), lines.count))
    summaries = marks.errors | marks.warnings | tail | _candidates(lines, _SUMMARY_KEYS)
    marks.summaries = summaries_among(lines.items, summaries)
    shown: set[str] = set()
    frames = _Frames(lines.items)
    for index in sorted({i for key in _FRAME_KEYS for i in lines.find_all(key)}):
        _frame(lines, index, marks, shown, frames)
    marks.carets = _carets(lines, marks.key_frames | marks.project_frames | marks.other_frames)
    marks.flags = _confirm(lines, set(lines.find_all("{")), _FLAG)
    marks.repeats = repeated_frames(lines, traced)
    hunks = lines.find_all("\n@@ ")
    if hunks or lines.text.startswith("@@ "):
        _diff(lines, [i + 1 for i in hunks] + ([0] if lines.text.startswith("@@ ") else []), marks)
    return marks


def _diff(lines: Lines, hunks: list[int], marks: LogMarks) -> None:
    """Unified diffs: file and hunk headers are key; changed lines inside hunks come next.
    Only the lines from each hunk header on are walked, so the cost is the diff's size."""
    items = lines.items
    starts = lines.find_all("\ndiff --git ") + lines.find_all("\n--- a/")
    if lines.text.startswith(("diff --git ", "--- ")):
        starts.append(-1)
    for head in starts:  # the line before a file header (find_all reports the newline's line)
        for i in range(head + 1, min(head + 5, lines.count)):
            if items[i].startswith(_DIFF_HEADS) or _is_minus_plus(items, i):
                marks.diff_heads.add(i)
                marks.diff_lines += 1
    for head in sorted(hunks):
        marks.diff_heads.add(head)
        marks.diff_lines += 1
        i = head + 1
        while i < lines.count and not items[i].startswith("@@ "):
            line = items[i]
            if line[:1] in ("+", "-") and not _is_minus_plus(items, i):
                marks.diff_changes.add(i)
            elif not (line[:1] == " " or line == "" or line.startswith("\\ ")):
                break
            marks.diff_lines += 1
            i += 1


def _is_minus_plus(items: list[str], i: int) -> bool:
    """A file header pair: ``--- a/x`` followed by ``+++ b/x``."""
    line = items[i]
    if line.startswith("--- "):
        return i + 1 < len(items) and items[i + 1].startswith("+++ ")
    return line.startswith("+++ ") and i > 0 and items[i - 1].startswith("--- ")


def _frame(lines: Lines, index: int, marks: LogMarks, shown: set[str], frames: _Frames) -> None:
    """Mark the frame at ``index``: key (a traceback's first, or near its exception) unless an
    earlier frame of this output is the same line (``importlib/__init__.py:126: in
    import_module`` over each of 17 test modules that failed to import); else project or library.
    """
    line = lines.items[index]
    match = _FRAME.match(line, 0, SCAN_CHARS)
    if match is None:
        return
    nxt = index + 1
    if nxt < lines.count and _is_frame_code(line, lines.items[nxt]):
        marks.ties[index] = nxt
    first = not _frame_within(frames, index, -1)
    near_end = _frames_below(frames, index) < KEY_LAST_FRAMES
    path = match.group(1) or match.group(2)
    library = any(part in path for part in _LIBRARY)
    again = line[:SCAN_CHARS] in shown
    shown.add(line[:SCAN_CHARS])
    if (first or near_end) and not again:
        marks.key_frames.add(index)
    else:
        (marks.other_frames if library else marks.project_frames).add(index)


class _Frames:
    """Which lines are traceback frames, each line matched once: every frame asks about the
    two lines on each side of it (a log of 60,000 frames matched each line eight times)."""

    __slots__ = ("items", "known")

    def __init__(self, items: list[str]) -> None:
        self.items = items
        self.known: dict[int, bool] = {}

    def at(self, j: int) -> bool:
        found = self.known.get(j)
        if found is None:
            inside = 0 <= j < len(self.items)
            found = inside and _FRAME.match(self.items[j], 0, SCAN_CHARS) is not None
            self.known[j] = found
        return found


def _frame_within(frames: _Frames, index: int, step: int) -> bool:
    """Whether another frame sits within two lines of ``index`` in direction ``step``."""
    return frames.at(index + step) or frames.at(index + 2 * step)


def _frames_below(frames: _Frames, index: int) -> int:
    """How many frames follow ``index`` in the same traceback (stops at KEY_LAST_FRAMES)."""
    count, j = 0, index
    while count < KEY_LAST_FRAMES and _frame_within(frames, j, 1):
        j = j + 1 if frames.at(j + 1) else j + 2
        count += 1
    return count


def _is_frame_code(frame: str, line: str) -> bool:
    indent = len(frame) - len(frame.lstrip())
    return len(line) - len(line.lstrip()) > indent and not _FRAME.match(line) and not is_caret(line)


def value_lines(lines: Lines) -> set[int]:
    """Lines of a script's output that report a value: ``Expected: 3``, ``Actual year: 1996``,
    ``Result = 0.25``, ``Got random number: 1364650861`` or a flag."""
    found = _candidates(lines, _VALUE_KEYS)
    items = lines.items
    return {
        i
        for i in found
        if _DIGIT.search(items[i], 0, SCAN_CHARS) or _FLAG.search(items[i], 0, SCAN_CHARS)
    }


def repeated_frames(lines: Lines, traced: list[int] | None = None) -> dict[int, tuple[int, int]]:
    """Lines of tracebacks that repeat an earlier traceback, mapped to the first and last line
    (0-based) of the earlier copy.

    A traceback is its ``Traceback (most recent call last):`` line, the indented frame lines
    under it and the exception line after them. When all of it repeats an earlier one, all of
    it maps to that copy; when only the frames do (the same failure with another message), the
    frames map to the earlier frames and the header and exception line stay. Each traceback is
    read once, so this is linear in the text.
    """
    blocks: dict[tuple[str, ...], tuple[int, int]] = {}
    frames_seen: dict[tuple[str, ...], tuple[int, int]] = {}
    out: dict[int, tuple[int, int]] = {}
    items = lines.items
    # a head's line holds "traceback" in any case: among those (``traced``), no scan is needed
    heads = (
        lines.find_all(_TRACE_HEAD)
        if traced is None
        else [i for i in traced if _TRACE_HEAD in items[i]]
    )
    for head in heads:
        start = end = head + 1
        while end < len(items) and items[end][:1] in (" ", "\t") and items[end].strip():
            end += 1
        if end - start < _MIN_REPEAT:
            continue
        frames = tuple(items[start:end])
        exception = items[end] if end < len(items) else ""
        header = items[head][items[head].find(_TRACE_HEAD) :]
        block = (header, *frames, exception)
        if exception.strip() and block in blocks:
            for i in range(head, end + 1):
                out[i] = blocks[block]
        elif frames in frames_seen:
            for i in range(start, end):
                out[i] = frames_seen[frames]
        else:
            frames_seen[frames] = (start, end - 1)
            if exception.strip():
                blocks[block] = (head, end)
    return out
