"""Counting tokens: a protocol, a dependency-free estimate, and exact counts on tiktoken.

The exact counter never downloads: it loads a vocabulary file from a path you give, from
``$TOKENLEAN_TIKTOKEN_DIR``, or from tiktoken's own cache, and otherwise raises
:class:`VocabularyNotFoundError` at once, so an offline machine never hangs on it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from tokenlean import checks
from tokenlean._caches import CACHE_MAX_BYTES, BoundedMemo
from tokenlean.transcript import Message, checked_messages

if TYPE_CHECKING:
    import tiktoken

EncodingName = Literal["o200k_base", "cl100k_base"]

#: Tokens a chat format spends around each message (role markers, separators).
MESSAGE_OVERHEAD = 4


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that can count the tokens of a string."""

    def count(self, text: str) -> int: ...


# ---------------------------------------------------------------------------------------------
# Estimate
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


def _chunks(text: str, cuts: re.Pattern[str] = _CUT) -> Iterator[str]:
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
        pieces = _chunks(text) if len(text) <= _SAMPLE_ABOVE else _samples(text)
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


# ---------------------------------------------------------------------------------------------
# Exact counts on tiktoken


class VocabularyNotFoundError(FileNotFoundError):
    """The tiktoken vocabulary is not on this machine and tokenlean will not download it."""


@dataclass(frozen=True, slots=True)
class _Spec:
    sha256: str
    pat_str: str
    special_tokens: Mapping[str, int]


_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_SPECS: dict[str, _Spec] = {
    "o200k_base": _Spec(
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PAT,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
    "cl100k_base": _Spec(
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PAT,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
}
#: tiktoken caches a downloaded vocabulary under the sha1 of its source address.
TIKTOKEN_CACHE_KEYS = {
    "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
    "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
}
_ENCODINGS: dict[tuple[str, str], tiktoken.Encoding] = {}


def find_vocabulary(
    encoding: EncodingName, vocab_path: str | os.PathLike[str] | None = None
) -> Path:
    """Where the vocabulary file for ``encoding`` is; raises if it is nowhere local."""
    candidates: list[Path] = []
    if vocab_path is not None:
        path = Path(vocab_path)
        candidates.append(path / f"{encoding}.tiktoken" if path.is_dir() else path)
    if env_dir := os.environ.get("TOKENLEAN_TIKTOKEN_DIR"):
        candidates.append(Path(env_dir) / f"{encoding}.tiktoken")
    if cache := _tiktoken_cache():
        candidates.append(cache / TIKTOKEN_CACHE_KEYS[encoding])
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates) or "nothing"
    raise VocabularyNotFoundError(
        f"no local vocabulary for {encoding} (tried {tried}); pass vocab_path= or set "
        "TOKENLEAN_TIKTOKEN_DIR to a folder holding "
        f"{encoding}.tiktoken. tokenlean never downloads it."
    )


def _tiktoken_cache() -> Path | None:
    """Where tiktoken keeps what it downloaded, by its own rule (``None``: caching is off)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        folder = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        folder = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        folder = str(Path(tempfile.gettempdir()) / "data-gym-cache")
    return Path(folder) if folder else None


def load_encoding(
    encoding: EncodingName = "o200k_base", vocab_path: str | os.PathLike[str] | None = None
) -> tiktoken.Encoding:
    """Build a tiktoken encoding from a local vocabulary file (checked against its sha256)."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    checks.one_of(encoding, "encoding", sorted(_SPECS))
    path = find_vocabulary(encoding, vocab_path)
    key = (encoding, str(path.resolve()))
    if key not in _ENCODINGS:
        spec = _SPECS[encoding]
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != spec.sha256:
            raise ValueError(f"{path} is not the {encoding} vocabulary (sha256 mismatch)")
        ranks = load_tiktoken_bpe(str(path), expected_hash=spec.sha256)
        _ENCODINGS[key] = tiktoken.Encoding(
            name=encoding,
            pat_str=spec.pat_str,
            mergeable_ranks=ranks,
            special_tokens=dict(spec.special_tokens),
        )
    return _ENCODINGS[key]


#: Where an exact count may be split: after a newline or before a space, with a letter or digit
#: after it (and, for the space, before it). Neither o200k's nor cl100k's pre-tokenizer puts
#: such a position inside a piece, so the pieces' counts add up to the whole text's count.
_TOKEN_CUT = re.compile(r"\n(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?= [A-Za-z])")


class TiktokenCounter:
    """Exact counts with a tiktoken encoding loaded from a local file (see :func:`load_encoding`).

    Special-token text inside the input is counted as ordinary text, never rejected. Long texts
    are encoded in pieces cut where no token can span (:data:`_TOKEN_CUT`), so memory stays
    bounded: one list of token ids for a whole 50 MB text would take about 500 MB.
    """

    def __init__(
        self,
        encoding: EncodingName = "o200k_base",
        *,
        vocab_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if vocab_path is not None and not isinstance(vocab_path, (str, os.PathLike)):
            raise checks.ArgumentTypeError(
                f"vocab_path must be a path (str or os.PathLike) to a .tiktoken file or its "
                f"folder, got {checks.described(vocab_path)}"
            )
        self.encoding_name = encoding
        self._encoding = load_encoding(encoding, vocab_path)

    def count(self, text: str) -> int:
        if not text:
            return 0
        encode = self._encoding.encode_ordinary
        return sum(len(encode(piece)) for piece in _chunks(text, _TOKEN_CUT))

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.encoding_name!r})"


#: The one counter every threshold counts with when it is given none (output and input
#: shortening, the retrieval gate, the context editor's trigger, budgets, token saving, the
#: proxy's figures). An estimate, so a decision never depends on which vocabularies a machine
#: has; exact counts are for measuring (:func:`default_counter`).
DEFAULT_COUNTER = EstimateCounter()


def default_counter() -> TokenCounter:
    """The counter to *measure* with: exact o200k_base when its vocabulary is local, else the
    estimate. Thresholds never use it (they count with :data:`DEFAULT_COUNTER`)."""
    try:
        return TiktokenCounter("o200k_base")
    except (VocabularyNotFoundError, ImportError):
        return EstimateCounter()


class MemoCounter:
    """A counter with a bounded memo: long runs count the same texts on every call.

    Texts shorter than 64 characters are counted directly (cheaper than remembering them).
    """

    def __init__(
        self, counter: TokenCounter, *, max_entries: int = 8192, max_bytes: int = CACHE_MAX_BYTES
    ) -> None:
        self.counter = checks.token_counter(counter, "counter")
        self._memo = BoundedMemo(counter.count, max_bytes=max_bytes, max_entries=max_entries)

    def count(self, text: str) -> int:
        if len(text) < 64:
            return self.counter.count(text)
        return int(self._memo(text))


def memoized(counter: TokenCounter) -> MemoCounter:
    """``counter`` with a memo of its own (itself when it already has one), for the object
    that counts with it: each middleware counts a text once, however many calls re-send it."""
    if isinstance(counter, MemoCounter):
        return counter
    return MemoCounter(counter)


# ---------------------------------------------------------------------------------------------
# Whole requests


def message_tokens(message: Message, counter: TokenCounter) -> int:
    """Tokens one message costs: its text, its tool calls, and the per-message overhead."""
    total = MESSAGE_OVERHEAD + counter.count(message.text)
    for call in message.tool_calls:
        total += counter.count(call.name) + counter.count(
            json.dumps(call.args, ensure_ascii=False, default=str)
        )
    return total


def tool_schema_text(tools: Iterable[Mapping[str, Any]]) -> str:
    """The tool schemas as the JSON a provider receives (stable key order)."""
    return json.dumps(list(tools), ensure_ascii=False, sort_keys=True, default=str)


def count_request(
    messages: Sequence[Message],
    counter: TokenCounter,
    *,
    system: str | None = None,
    tools: Sequence[Mapping[str, Any]] = (),
) -> int:
    """Tokens of a whole request: tool schemas, system prompt and every message."""
    checked_messages(messages)
    checks.token_counter(counter, "counter")
    if system is not None:
        checks.text(system, "system")
    checks.sequence(tools, "tools", of="tool schema mappings")
    total = sum(message_tokens(m, counter) for m in messages)
    if system:
        total += MESSAGE_OVERHEAD + counter.count(system)
    if tools:
        total += counter.count(tool_schema_text(tools))
    return total
