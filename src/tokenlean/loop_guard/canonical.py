"""The canonical form of a text: what stays when the parts that change between two runs of the
very same command are replaced (see :func:`canonical_text`)."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable
from functools import lru_cache

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_PYTEST_OF = "pytest-of-"
_PATH_PART = re.compile(r"[^/\s]*")
_PYTEST_N = re.compile(r"/pytest-\d+")
# A UUID from its first hyphen on (the 8 hex digits before it are checked by the lookbehind):
# starting at a literal lets ``re`` jump from hyphen to hyphen instead of trying every position.
_UUID_TAIL = re.compile(
    r"-(?<=\b[0-9a-f]{8}-)[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I
)


def _sub(pattern: str, replacement: str, flags: int = 0) -> Callable[[str], str]:
    return functools.partial(re.compile(pattern, flags).sub, replacement)


def _uuids(text: str) -> str:
    r"""``re.sub(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>",
    text, flags=re.I)``, seven times faster on logs (two UUIDs can never overlap)."""
    parts: list[str] = []
    done = 0
    for match in _UUID_TAIL.finditer(text):
        parts += [text[done : match.start() - 8], "<uuid>"]
        done = match.end()
    return "".join(parts) + text[done:] if parts else text


def _pytest_dirs(text: str) -> str:
    r"""``re.sub(r"pytest-of-[^/\s]+/pytest-\d+", "pytest-of-<user>/pytest-<n>", text)``, linear.

    The regex restarts at every ``pytest-of-`` and rescans the rest of the path part each time,
    so a long part repeating ``pytest-of-`` costs quadratic time. Every start inside one part
    reaches the same end, so each part is scanned once here.
    """
    parts: list[str] = []
    done, part_end = 0, -1
    start = text.find(_PYTEST_OF)
    while start >= 0:
        name = start + len(_PYTEST_OF)
        if name >= part_end:  # outside the part scanned last: find where this one ends
            part_end = _PATH_PART.match(text, name).end()  # type: ignore[union-attr]  # matches ""
        tail = _PYTEST_N.match(text, part_end) if part_end > name else None
        if tail is None:
            start = text.find(_PYTEST_OF, start + 1)
            continue
        parts += [text[done:start], "pytest-of-<user>/pytest-<n>"]
        done = tail.end()
        start = text.find(_PYTEST_OF, done)
    return "".join(parts) + text[done:] if parts else text


class _Probe:
    """What the guards of :data:`_VOLATILE` ask about one text, each worked out once.

    A guard is a C-level test of what any match of its pattern must contain; ``re`` tries a
    pattern that starts with a class at every position, which costs more than the test. The
    shapes are the ASCII text with every digit (or hex digit) written "0": a pattern needing
    ``\\d{4}-\\d{2}`` can only match where the shape holds "0000-00". Only for ASCII text:
    ``\\d`` and ``re.I`` also match other characters (Arabic digits, the long s for "s"), so
    the guards let any other text through to the regex.
    """

    __slots__ = ("_lower", "_shapes", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._shapes: dict[bytes, bytes | None] = {}
        self._lower: str | None = None

    def shape_has(self, table: bytes, needle: bytes) -> bool:
        """Whether the text may hold ``needle`` once written with ``table``."""
        if table not in self._shapes:
            text = self.text
            self._shapes[table] = text.encode("ascii").translate(table) if text.isascii() else None
        shape = self._shapes[table]
        return shape is None or needle in shape

    def has_word(self, *words: str) -> bool:
        """Whether the text may hold one of ``words`` (lower case) in any case."""
        if not self.text.isascii():
            return True
        if self._lower is None:
            self._lower = self.text.lower()
        return any(word in self._lower for word in words)


_DIGITS = bytes.maketrans(b"123456789", b"0" * 9)
_HEX = bytes.maketrans(b"123456789abcdefABCDEF", b"0" * 21)
Guard = Callable[[_Probe], bool]

# Order matters: UUIDs and temp names before bare hex, full timestamps before their time of day.
# Every step is linear (tests/test_worst_case.py feeds each its worst inputs). ``\bX`` is written
# ``X(?<!\wX)`` (X's first character, then "not a word character before it"): the same matches,
# but a pattern that starts with a literal or a class lets ``re`` skip ahead to the positions
# where it can start, several times faster on large outputs. Between optional spaces, an optional
# separator is ``\s*(?:[=:#]\s*)?``, not ``\s*[=:#]?\s*`` (which tries every way of splitting a
# long run of spaces between its two halves: quadratic). Each step runs only when its guard
# (see :class:`_Probe`), if it has one, says its pattern may match.
_VOLATILE: tuple[tuple[Guard | None, Callable[[str], str]], ...] = (
    (None, _uuids),
    (
        None,
        _sub(r"/(?:private/var|var)/folders/[^/\s]+/[^/\s]+/T/", "<tmpdir>/"),
    ),
    (None, _pytest_dirs),
    (
        None,
        _sub(r"tmp(?<!\wtmp)[._]?(?=[A-Za-z_]*\d)[A-Za-z0-9_]{6,}", "tmp<id>"),  # random: a digit
    ),
    (
        lambda p: p.shape_has(_DIGITS, b"0000-00-00"),
        _sub(
            r"\d(?<!\w\d)\d{3}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?)?"
            r"(?:\s?(?:Z|UTC|[+-]\d{2}:?\d{2}))?",
            "<time>",
        ),
    ),
    (
        None,
        _sub(
            rf"{_MONTH}(?<!\w{_MONTH})[a-z]*\s+\d{{1,2}}\s+(?:\d{{1,2}}:\d{{2}}|\d{{4}})\b",
            "<time>",
        ),
    ),
    (
        lambda p: p.shape_has(_DIGITS, b"0:00:00"),
        _sub(r"\d(?<!\w\d)\d?:\d{2}:\d{2}(?:[.,]\d+)?\b", "<time>"),
    ),
    (  # unix epochs, 2017-2033
        None,
        _sub(r"1(?<!\w1)[5-9]\d{8}(?:\.\d+|\d{3})?\b", "<time>"),
    ),
    (
        None,
        _sub(r"\d(?<!\w\d)\d*(?:\.\d+)?\s?(?:ms|us|µs|ns|s|secs?|seconds?)\b", "<duration>"),
    ),
    (
        lambda p: p.has_word("pid", "process", "thread"),
        _sub(r"(?=[pt])\b(pid|process|thread)(\s*(?:[=:#]\s*)?)\d+", r"\1\2<pid>", re.I),
    ),
    (None, _sub(r"/proc/\d+", "/proc/<pid>")),
    (  # "^" of re.M: the start, or after a newline (no other line boundary)
        lambda p: p.text.startswith("[") or "\n[" in p.text,
        _sub(r"^\[\d+\]\s+\d+$", "[<job>] <pid>", re.M),
    ),
    (None, _sub(r"0(?<!\w0)x[0-9a-f]+\b", "0x<hex>", re.I)),
    (
        lambda p: p.shape_has(_HEX, b"0" * 7),
        _sub(  # 7+ hex digits holding a digit and a letter: the first is one, the rest the other
            r"[0-9a-f](?<!\w[0-9a-f])(?:(?<=\d)(?=[0-9a-f]*[a-f])|(?<!\d)(?=[0-9a-f]*\d))"
            r"[0-9a-f]{6,}\b",
            "<hex>",
            re.I,
        ),
    ),
)


#: Longer texts are compared by their canonical head and tail and the exact bytes between.
CANONICAL_SPAN = 64_000


@lru_cache(maxsize=2048)
def canonical_text(text: str) -> str:
    """``text`` with volatile parts replaced by placeholders and whitespace collapsed.

    Replaced: UUIDs; ISO dates and timestamps, ``ls``-style dates, times of day, unix epochs and
    durations (``0.12s``); process and thread ids (``pid 123``, ``/proc/123``, ``[1] 4242``);
    ``0x`` addresses and hex ids of 7+ characters mixing digits and letters (git hashes); macOS
    temp dirs, pytest temp dirs and random ``tmpXXXXXX`` names (with a digit in them). Every
    whitespace run becomes one space. Two outputs of the same command that differ only in these
    parts compare equal.

    A text over ``2 * CANONICAL_SPAN`` characters is canonicalised in its first and last
    :data:`CANONICAL_SPAN` characters only, with a digest of the exact text between: two huge
    outputs compare equal only when their middles are byte for byte the same (when in doubt, a
    step is not a repeat), and the work and the memory stay bounded.
    """
    if len(text) > 2 * CANONICAL_SPAN:
        middle = text[CANONICAL_SPAN:-CANONICAL_SPAN].encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(middle).hexdigest()[:16]
        head, tail = text[:CANONICAL_SPAN], text[-CANONICAL_SPAN:]
        return f"{canonical_text(head)} <{len(middle)} bytes {digest}> {canonical_text(tail)}"
    probe = _Probe(text)
    for may_match, replace in _VOLATILE:
        if may_match is None or may_match(probe):
            replaced = replace(probe.text)
            if replaced is not probe.text:  # (``re`` returns the very text when nothing matched)
                probe = _Probe(replaced)
    return " ".join(probe.text.split())
