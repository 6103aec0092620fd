"""The token estimate that needs nothing installed: :class:`EstimateCounter`, the default
counter of every threshold (:data:`tokenlean.tokens.DEFAULT_COUNTER`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tokenlean import checks

__all__ = ["EstimateCounter", "chunks"]

#
# What the estimate counts, in regex terms over the character classes L = [A-Za-z], D = \d,
# S = \s (Unicode \d and \s, as in ``re``) and P = everything else: words ``[A-Za-z]+``; the
# long-word excess ``(?<=[A-Za-z]{7})[A-Za-z]{5}`` (``max(0, (n - 7) // 5)`` per word of n
# letters); digit groups ``\d{1,3}`` and digit runs ``\d+``; punctuation characters and runs
# ``P+``; line breaks ``\s*\n`` (one per whitespace run holding a newline); indents
# ``(?<=\n)[ \t]{2,}``; non-ASCII characters. ``re.findall`` on those builds a list per feature
# (gigabytes for a 50 MB text), costs about a second per feature on 50 MB, and ``\s*\n``
# backtracks quadratically on a long run of spaces without a newline. So the text is mapped to
# one class byte per character and each feature is counted with C-level ``bytes`` passes
# (``translate``, ``count``, ``replace``) and big-integer passes (shifts, ``&``, ``|``: each
# character's class byte beside the previous characters'), chunk by chunk: linear time, bounded
# memory.

_CHUNK_CHARS = 1 << 16  # a chunk stays in cache across the dozen passes over it
#: Longer texts are estimated from :data:`_SAMPLES` chunks spread evenly over them, scaled up:
#: an estimate of a 50 MB text then costs what one of 2 MB does (a count of every chunk took
#: about 1.5 s), and nothing but a threshold is ever decided on a text that size.
_SAMPLE_ABOVE = 1 << 22
_SAMPLES = 32
_CUT_LOOKAHEAD = 4096  # how far a sample's edge may move to fall between two features
#: Where a chunk may end: between whitespace and non-whitespace, so no counted feature spans it.
_CUT = re.compile(r"(?<=\s)(?=\S)|(?<=\S)(?=\s)")
_UNICODE_DIGIT_OR_SPACE = re.compile(r"[\d\s]")


def _class_of(char: str) -> bytes:
    """The class byte of an ASCII character."""
    if ("A" <= char <= "Z") or ("a" <= char <= "z"):
        return b"a"
    if char.isdecimal():  # re's \d is str.isdecimal, its \s str.isspace
        return b"0"
    if char == "\n":
        return b"n"
    if char in " \t":
        return b"t"
    return b"s" if char.isspace() else b"p"


#: UTF-8 byte -> class: lead bytes of non-ASCII characters are punctuation (non-ASCII digits and
#: spaces are swapped for ASCII ones first, see :func:`_ascii_stand_ins`).
_CLASSES = b"".join(_class_of(chr(b)) for b in range(128)) + b"p" * 128
#: UTF-8 continuation bytes, deleted so that each character leaves exactly one class byte.
_CONTINUATION = bytes(range(0x80, 0xC0))
_ASCII = bytes(range(128))


#: Newlines kept, every other class a blank (the other spaces are deleted with it).
_NEWLINES_APART = bytes(ord("n") if b == ord("n") else ord(" ") for b in range(256))
#: Class byte -> one bit per class (letters 1, digits 2, punctuation 4, newlines 8, blanks 16,
#: other spaces 32), so a big integer of them holds every class's positions at once.
_BITS = bytes.maketrans(b"a0pnts", bytes([1, 2, 4, 8, 16, 32]))
#: A character's bit ORed with its own bit shifted up by one where it starts a run of its class:
#: 3, 6 and 12 are the first letter, digit and punctuation character of a run.
_WORD_START, _DIGITS_START, _PUNCT_START = b"\x03", b"\x06", b"\x0c"
#: A digit inside a run (its bit alone), three of them.
_DIGIT_GROUP = b"\x02" * 3
#: A letter with the seven characters before it letters too (its word's eighth letter on).
_PAST_SEVEN = b"\x01" * 5


def chunks(text: str, cuts: re.Pattern[str] = _CUT) -> Iterator[str]:
    """``text`` in pieces of about ``_CHUNK_CHARS``, each ending where ``cuts`` matches."""
    start = 0
    while len(text) - start > _CHUNK_CHARS:
        cut = cuts.search(text, start + _CHUNK_CHARS)
        if cut is None:
            break
        yield text[start : cut.end()]
        start = cut.end()
    yield text[start:] if start else text


def _samples(text: str) -> Iterator[str]:
    """:data:`_SAMPLES` chunks of about ``_CHUNK_CHARS`` spread evenly over a long ``text``,
    each starting and ending between whitespace and non-whitespace where one is near."""
    step = (len(text) - _CHUNK_CHARS) // (_SAMPLES - 1)
    for k in range(_SAMPLES):
        start = _edge(text, k * step)
        yield text[start : _edge(text, start + _CHUNK_CHARS)]


def _edge(text: str, at: int) -> int:
    """The first cut position from ``at`` on, within :data:`_CUT_LOOKAHEAD` (else ``at``)."""
    if at <= 0 or at >= len(text):
        return max(0, min(at, len(text)))
    cut = _CUT.search(text, at, at + _CUT_LOOKAHEAD)
    return at if cut is None else cut.end()


def _ascii_stand_ins(chunk: str, others: str) -> str:
    """``chunk`` with every non-ASCII digit or space (``others`` holds the chunk's non-ASCII
    characters) replaced by an ASCII character of the same class: "0", or "\\r" (a space that
    is neither a newline nor a blank). One ``str.replace`` per distinct character."""
    found = _UNICODE_DIGIT_OR_SPACE.search(others)
    while found is not None:
        char = found.group()
        chunk = chunk.replace(char, "0" if char.isdecimal() else "\r")
        others = others.replace(char, "")
        found = _UNICODE_DIGIT_OR_SPACE.search(others, found.start())
    return chunk


def _features(chunk: str) -> tuple[int, int, int, int, int, int, int, int, int]:
    """The estimate's feature counts of ``chunk``, in :class:`EstimateCounter` field order."""
    if chunk.isascii():
        raw, non_ascii = chunk.encode("ascii"), 0
    else:
        raw = chunk.encode("utf-8", "surrogatepass")
        others = raw.translate(None, _ASCII).decode("utf-8", "surrogatepass")
        non_ascii = len(others)
        if _UNICODE_DIGIT_OR_SPACE.search(others):
            raw = _ascii_stand_ins(chunk, others).encode("utf-8", "surrogatepass")
    classes = raw.translate(_CLASSES, _CONTINUATION)
    size = len(classes)
    # One byte per character, most significant first, so ``>> 8`` moves each character's bits
    # under the next one: a class bit of ``same`` says the previous character has that class.
    bits = int.from_bytes(classes.translate(_BITS), "big")
    same = bits & (bits >> 8)
    # A run's first character gets its bit doubled in too; counting single bytes of that is
    # what counting two-byte pairs ("xa") cost three times as much for.
    marked = (bits | ((bits ^ same) << 1)).to_bytes(size, "big")
    # Each digit run of n gets two more digits (its first becomes three inside ones): every 3
    # of it is one group, ceil(n / 3) per run; the text grew by two bytes per run.
    padded = marked.replace(_DIGITS_START, _DIGIT_GROUP)
    groups, digit_runs = padded.count(_DIGIT_GROUP), (len(padded) - size) // 2
    # Letters whose seven previous characters are letters: n - 7 of them per word of n > 7,
    # every five of them one long-word excess.
    past_three = same & (same >> 16)
    past_seven = (past_three & (past_three >> 32)).to_bytes(size, "big")
    # Without the other spaces, each whitespace run holding a newline is one run of "n": one
    # piece of a split on the rest (a chunk holds at most one piece per two characters).
    breaks = len(classes.translate(_NEWLINES_APART, b"ts").split())
    return (
        marked.count(_WORD_START),
        past_seven.count(_PAST_SEVEN),
        groups,
        digit_runs,
        classes.count(b"p"),
        marked.count(_PUNCT_START),
        breaks,
        classes.count(b"ntt"),  # a newline, then two blanks: one indent
        non_ascii,
    )


@dataclass(frozen=True, slots=True)
class EstimateCounter:
    """A fast estimate that needs nothing installed and tracks BPE counts on code, logs, JSON.

    It counts what a byte-pair tokenizer spends tokens on instead of dividing characters by
    four: words (long ones cost extra), digits (o200k splits them in groups of three),
    punctuation runs and characters, line breaks, indentation and non-ASCII characters (the
    exact definitions are in a comment above). The cost is linear in the input, with a few
    C-level passes per megabyte and bounded memory. The weights are a least-squares fit of
    relative error against o200k_base on ``shared/data`` (tool outputs and trajectory messages);
    ``benchmarks/estimate_error.py`` reports the error by content kind.
    """

    word: float = 1.044
    long_word_excess: float = 0.875
    digit_group: float = 0.984
    digit_run: float = 1.022
    punct: float = 0.09
    punct_run: float = 0.595
    line_break: float = 0.518
    indent: float = 0.79
    non_ascii: float = 1.549

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            checks.number(getattr(self, name), name, at_least=0)

    def count(self, text: str) -> int:
        if not text:
            return 0
        totals = [0] * 9
        pieces = chunks(text) if len(text) <= _SAMPLE_ABOVE else _samples(text)
        sampled = 0
        for chunk in pieces:
            sampled += len(chunk)
            for i, value in enumerate(_features(chunk)):
                totals[i] += value
        scale = len(text) / sampled
        words, excess, groups, runs, punct, punct_runs, breaks, indents, non_ascii = totals
        total = scale * (
            self.word * words
            + self.long_word_excess * excess
            + self.digit_group * groups
            + self.digit_run * runs
            + self.punct * punct
            + self.punct_run * punct_runs
            + self.line_break * breaks
            + self.indent * indents
            + self.non_ascii * non_ascii
        )
        return max(1, round(total))
