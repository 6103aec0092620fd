"""Which lines of a log matter: errors, warnings, summaries, exit codes and traceback frames.

Each kind is found in two steps so the cost stays linear: ``str.find`` over the whole text
for a few keywords picks candidate lines, then a small anchored regex (no nested quantifiers)
confirms each candidate on at most its first :data:`SCAN_CHARS` characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tokenlean.shorten.text import Lines

SCAN_CHARS = 2000
_ERROR = re.compile(
    r"\b(?:[A-Z]\w*)?(?:Error|Exception)\b"
    r"|\b(?:error|ERROR|FAIL|FAILED|FAILURE|Failed|Failure|failed|fatal|FATAL|panic|Traceback"
    r"|Aborted|Segmentation fault|Permission denied|No such file or directory"
    r"|command not found|cannot|Cannot|not found)\b"
    r"|^E {2,}\S|^<returncode>[1-9]|\b(?:exit (?:code|status)|returned non-zero)"
)
_ERROR_KEYS = (
    "rror",
    "xception",
    "ERROR",
    "FAIL",
    "ail",
    "atal",
    "FATAL",
    "anic",
    "PANIC",
    "Traceback",
    "Aborted",
    "fault",
    "denied",
    "No such file",
    "not found",
    "annot",
    "E  ",
    "<returncode>",
    "exit code",
    "exit status",
    "non-zero",
)
_WARNING = re.compile(r"\b(?:[A-Z]\w*)?Warning\b|\b(?:warning|WARNING|WARN|Warn)\b")
_WARNING_KEYS = ("arning", "WARN", "Warn")
_SUMMARY = re.compile(
    r"\b\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|tests?"
    r"|problems?|issues?|violations?|files? (?:changed|checked|reformatted|left))\b"
    r"|^Ran \d+ tests?|^(?:OK|FAILED)\b|^={3,} .* ={3,}$|\bSuccessfully\b|^All \w+ passed"
    r"|^Found \d+|^<returncode>"
)
_SUMMARY_KEYS = (
    " passed",
    " failed",
    " error",
    " skipped",
    " xfail",
    " warning",
    " deselected",
    " test",
    " problem",
    " issue",
    " violation",
    " file",
    "Ran ",
    "OK",
    "FAILED",
    "===",
    "Successfully",
    "All ",
    "Found ",
    "<returncode>",
)
_FRAME = re.compile(r'^\s*File "([^"\n]*)", line \d+')
_LIBRARY = ("site-packages", "dist-packages", "/lib/python", "<frozen", "<string>")
_CARET_CHARS = frozenset("^~ \t")
_DIFF_HEADS = ("@@ ", "diff --git", "--- a/", "+++ b/")
#: The frames nearest the exception are always kept (with the first frame and the exception).
KEY_LAST_FRAMES = 3


@dataclass
class LogMarks:
    """Line indices by role. ``ties`` maps a frame line to the code line that belongs to it.

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


def _confirmed(lines: Lines, keys: tuple[str, ...], pattern: re.Pattern[str]) -> set[int]:
    candidates: set[int] = set()
    for key in keys:
        candidates.update(lines.find_all(key))
    items = lines.items
    return {i for i in candidates if pattern.search(items[i], 0, SCAN_CHARS)}


def error_lines(text: str) -> list[int]:
    """0-based indices of the lines of ``text`` that look like errors (exported for tests)."""
    return sorted(_confirmed(Lines(text), _ERROR_KEYS, _ERROR))


def is_caret(line: str) -> bool:
    """Python 3.11+ position markers (``^^^^``/``~~~``) under a traceback's code line."""
    stripped = line.strip()
    return len(stripped) >= 2 and stripped[0] in "^~" and _CARET_CHARS.issuperset(line)


def classify(lines: Lines) -> LogMarks:
    marks = LogMarks()
    marks.errors = _confirmed(lines, _ERROR_KEYS, _ERROR)
    marks.warnings = _confirmed(lines, _WARNING_KEYS, _WARNING) - marks.errors
    marks.summaries = _confirmed(lines, _SUMMARY_KEYS, _SUMMARY)
    for index in sorted(lines.find_all('File "')):
        _frame(lines, index, marks)
    for index in lines.find_all("^") + lines.find_all("~~"):
        if is_caret(lines.items[index]):
            marks.carets.add(index)
    if lines.find_all("\n@@ ", limit=1) or lines.text.startswith("@@ "):
        _diff(lines, marks)
    return marks


def _diff(lines: Lines, marks: LogMarks) -> None:
    """Unified diffs: file and hunk headers are key; changed lines inside hunks come next."""
    in_hunk = False
    for i, line in enumerate(lines.items):
        paired = line.startswith("+++ ") and i > 0 and lines.items[i - 1].startswith("--- ")
        if line.startswith(_DIFF_HEADS) or paired:
            marks.diff_heads.add(i)
            if paired:
                marks.diff_heads.add(i - 1)
            in_hunk = line.startswith("@@ ")
        elif in_hunk and line[:1] in ("+", "-"):
            marks.diff_changes.add(i)
        elif in_hunk and not (line[:1] == " " or line == "" or line.startswith("\\ ")):
            in_hunk = False
        marks.diff_lines += in_hunk or i in marks.diff_heads


def _frame(lines: Lines, index: int, marks: LogMarks) -> None:
    match = _FRAME.match(lines.items[index], 0, SCAN_CHARS)
    if match is None:
        return
    nxt = index + 1
    if nxt < lines.count and _is_frame_code(lines.items[index], lines.items[nxt]):
        marks.ties[index] = nxt
    first = not _frame_within(lines, index, -1)
    near_end = _frames_below(lines, index) < KEY_LAST_FRAMES
    library = any(part in match.group(1) for part in _LIBRARY)
    if first or near_end:
        marks.key_frames.add(index)
    else:
        (marks.other_frames if library else marks.project_frames).add(index)


def _frame_within(lines: Lines, index: int, step: int) -> bool:
    """Whether another frame sits within two lines of ``index`` in direction ``step``."""
    for j in (index + step, index + 2 * step):
        if 0 <= j < lines.count and _FRAME.match(lines.items[j], 0, SCAN_CHARS):
            return True
    return False


def _frames_below(lines: Lines, index: int) -> int:
    """How many frames follow ``index`` in the same traceback (stops at KEY_LAST_FRAMES)."""
    count, j = 0, index
    while count < KEY_LAST_FRAMES and _frame_within(lines, j, 1):
        j = j + 1 if _FRAME.match(lines.items[j + 1], 0, SCAN_CHARS) else j + 2
        count += 1
    return count


def _is_frame_code(frame: str, line: str) -> bool:
    indent = len(frame) - len(frame.lstrip())
    return len(line) - len(line.lstrip()) > indent and not _FRAME.match(line) and not is_caret(line)
