"""The canonical form of a text: what stays when the parts that change between two runs of the
very same command are replaced (see :func:`canonical_text`)."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable

from tokenlean._caches import byte_bounded

__all__ = ["CANONICAL_SPAN", "canonical_text"]

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

    A guard is a C-level test of what any match of its pattern must contain: ``re`` tries a
    pattern that starts with a class (``\\d``, ``[0-9a-f]``, or any letter under ``re.I``) at
    every position, which costs more than the test. Most guards read a *shape* of the text, its
    bytes with every digit (or hex digit) written "0" and every space " ": a pattern needing
    ``\\d{4}-\\d{2}`` can only match where the shape holds "0000-00". The searches are for
    literals, or patterns starting with one, which ``re`` and ``in`` find fast.
    """

    __slots__ = ("_lower", "_shapes", "ascii", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        # Outside ASCII, ``\d``, ``\s`` and ``re.I`` match more characters (Arabic digits,
        # the long s for "s"): a guard that depends on them lets such a text through.
        self.ascii = text.isascii()
        self._shapes: dict[bytes, bytes] = {}
        self._lower: str | None = None

    def shape(self, table: bytes) -> bytes:
        """The text's bytes written with ``table`` (a character outside ASCII as "?")."""
        if table not in self._shapes:
            self._shapes[table] = self.text.encode("ascii", "replace").translate(table)
        return self._shapes[table]

    def lower(self) -> str:
        if self._lower is None:
            self._lower = self.text.lower()
        return self._lower


_SPACES = b" \t\n\r\v\f\x1c\x1d\x1e\x1f"  # what ``\s`` matches in ASCII text
_DIGITS = bytes.maketrans(b"123456789" + _SPACES, b"0" * 9 + b" " * len(_SPACES))
_HEX = bytes.maketrans(b"123456789abcdefABCDEF", b"0" * 21)
_DURATION_END = re.compile(rb"0 ?[muns]")  # a digit, maybe a space, a unit's first letter
Guard = Callable[[_Probe], bool]


def _digits_have(needle: bytes) -> Guard:
    return lambda probe: not probe.ascii or needle in probe.shape(_DIGITS)


def _may_have_duration(probe: _Probe) -> bool:
    return not probe.ascii or _DURATION_END.search(probe.shape(_DIGITS)) is not None


def _may_have_pid(probe: _Probe) -> bool:
    if not probe.ascii:
        return True
    lower = probe.lower()
    return "pid" in lower or "process" in lower or "thread" in lower


def _may_have_hex_id(probe: _Probe) -> bool:
    # Any text: [0-9a-f] under re.I matches no character outside ASCII (a test checks).
    return b"0000000" in probe.shape(_HEX)


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
        _digits_have(b"0000-00-00"),
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
        _digits_have(b"0:00:00"),
        _sub(r"\d(?<!\w\d)\d?:\d{2}:\d{2}(?:[.,]\d+)?\b", "<time>"),
    ),
    (  # unix epochs, 2017-2033
        None,
        _sub(r"1(?<!\w1)[5-9]\d{8}(?:\.\d+|\d{3})?\b", "<time>"),
    ),
    (
        _may_have_duration,
        _sub(r"\d(?<!\w\d)\d*(?:\.\d+)?\s?(?:ms|us|µs|ns|s|secs?|seconds?)\b", "<duration>"),
    ),
    (
        _may_have_pid,
        _sub(r"(?=[pt])\b(pid|process|thread)(\s*(?:[=:#]\s*)?)\d+", r"\1\2<pid>", re.I),
    ),
    (None, _sub(r"/proc/\d+", "/proc/<pid>")),
    (  # "^" of re.M: the start, or after a newline (no other line boundary)
        lambda p: p.text.startswith("[") or "\n[" in p.text,
        _sub(r"^\[\d+\]\s+\d+$", "[<job>] <pid>", re.M),
    ),
    (None, _sub(r"0(?<!\w0)x[0-9a-f]+\b", "0x<hex>", re.I)),
    (
        _may_have_hex_id,
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


@byte_bounded(max_entries=2048)
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
