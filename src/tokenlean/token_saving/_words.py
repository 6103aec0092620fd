"""Word-level compression: a classifier marks each word keep or drop, and the text keeps its shape.

A :data:`WordClassifier` is any ``(words: list[str]) -> list[bool]`` callable. One that also takes a
``keep_ratio`` keyword receives the target fraction of words to keep (the tier's ratio, when the
middleware compresses older messages harder); :func:`accepts_keep_ratio` tells which kind it is.

:func:`compress_words` never lets the classifier drop what an agent needs verbatim: numbers,
identifiers, paths, operators, negations, whole pytest ``E`` lines, traceback and code lines.
Newlines and indentation are kept, so a log or a listing stays readable after compression.
"""

from __future__ import annotations

import inspect
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from tokenlean import checks
from tokenlean._failopen import fail_open

__all__ = [
    "DEFAULT_KEEP_RATIO",
    "RatioClassifier",
    "WordClassifier",
    "accepts_keep_ratio",
    "check_keep_ratio",
    "compress_words",
    "heuristic_classifier",
    "is_protected",
    "make_heuristic_classifier",
]

logger = logging.getLogger(__name__)

WordClassifier = Callable[[list[str]], list[bool]]
"""``(words) -> keep flags``, one flag per word; may also accept a ``keep_ratio`` keyword."""

DEFAULT_KEEP_RATIO = 0.5


class RatioClassifier(Protocol):
    """A word classifier that also takes the keep ratio to aim for (``None``: its own default)."""

    def __call__(self, words: list[str], *, keep_ratio: float | None = None) -> list[bool]: ...


_STOPWORD_TEXT = (
    "a an the of to in on at by for with as is are was were be been being and or but so if "
    "then than this that these those it its my i you your we our they their he she his her "
    "them there here just very really actually well okay ok also quite rather simply "
    "basically some any will would should could can may might do does did have has had "
    "which what who whom into onto from about over under again further once"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_NEGATIONS = frozenset(
    ("not", "no", "never", "none", "nor", "cannot", "without", "neither", "unless")
)
_SINGLE_LETTER_WORDS = frozenset({"a", "A", "I"})
_TRAILING_PUNCT = ".,;:!?"

# Lines kept whole: pytest failure lines, traceback frames, pytest source markers, diff hunks,
# and lines that start like code (dropping `return` or `def` would change what the line says).
_VERBATIM_LINE = re.compile(
    r"""^\s*(?:
        E(?:\s|$)
      | File\ "
      | Traceback\ \(
      | >(?:\s|$)
      | (?:\+\+\+|---|@@)\s
      | (?:def|class|return|import|from|if|elif|else|for|while|try|except|finally|raise|with
         |assert|yield|lambda|async|await)\b
      | @\w
    )""",
    re.VERBOSE,
)
_WORD = re.compile(r"\S+")
_INDENT = re.compile(r"[ \t\r\f\v]*")


def is_protected(word: str) -> bool:
    """True for words an agent may need verbatim: anything that is not a plain prose word.

    Numbers, identifiers (``_``, dots, inner capitals), paths, operators, brackets, quotes,
    ALL-CAPS markers such as ``FAILED``, single letters and negations are protected.
    """
    core = word.rstrip(_TRAILING_PUNCT)
    if not core:
        return False
    if not core.isalpha():
        return True
    if len(core) == 1:
        return core not in _SINGLE_LETTER_WORDS
    return core.lower() in _NEGATIONS or any(ch.isupper() for ch in core[1:])


def _drop_priority(word: str) -> tuple[int, int]:
    """Lower drops first: stopwords, then short words, then longer and capitalised ones."""
    core = word.rstrip(_TRAILING_PUNCT).lower()
    if core in _STOPWORDS or not core:
        return (0, len(core))
    if len(core) <= 3:
        return (1, len(core))
    return (3 if word[:1].isupper() else 2, len(core))


def heuristic_classifier(words: list[str], *, keep_ratio: float = DEFAULT_KEEP_RATIO) -> list[bool]:
    """Offline classifier: drop the least informative prose words until ``keep_ratio`` is met.

    Protected words are always kept, so the ratio is a target, not a guarantee. Deterministic.
    """
    keep = [True] * len(words)
    excess = len(words) - math.ceil(len(words) * keep_ratio)
    droppable = sorted(
        (i for i, w in enumerate(words) if not is_protected(w)),
        key=lambda i: (*_drop_priority(words[i]), i),
    )
    for i in droppable[: max(0, excess)]:
        keep[i] = False
    return keep


def make_heuristic_classifier(target_keep_ratio: float = DEFAULT_KEEP_RATIO) -> RatioClassifier:
    """A :func:`heuristic_classifier` whose default ratio is ``target_keep_ratio``.

    The result still accepts ``keep_ratio=``, so a tier's ratio overrides the default.
    """
    check_keep_ratio("target_keep_ratio", target_keep_ratio)

    def classify(words: list[str], *, keep_ratio: float | None = None) -> list[bool]:
        ratio = target_keep_ratio if keep_ratio is None else keep_ratio
        return heuristic_classifier(words, keep_ratio=ratio)

    return classify


def accepts_keep_ratio(classifier: Callable[..., object]) -> bool:
    """Whether ``classifier`` takes a ``keep_ratio`` keyword (or any keyword)."""
    try:
        params = inspect.signature(classifier).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind is p.VAR_KEYWORD or (p.name == "keep_ratio" and p.kind is not p.POSITIONAL_ONLY)
        for p in params
    )


def check_keep_ratio(name: str, value: float) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is a number in (0, 1]."""
    checks.number(value, name, above=0, at_most=1, wanted="a number in (0, 1]")


@dataclass(frozen=True, slots=True)
class _Line:
    indent: str
    words: tuple[str, ...]
    gaps: tuple[str, ...]  # whitespace before each word (the first one's is the indent)
    trailing: str
    verbatim: bool


def _parse_line(line: str) -> _Line:
    indent = _INDENT.match(line).group()  # type: ignore[union-attr]  # matches the empty string
    words: list[str] = []
    gaps: list[str] = []
    end = len(indent)
    for match in _WORD.finditer(line, len(indent)):
        gaps.append(line[end : match.start()])
        words.append(match.group())
        end = match.end()
    protected = sum(is_protected(w) for w in words)
    verbatim = bool(_VERBATIM_LINE.match(line)) or protected * 2 >= len(words)
    return _Line(indent, tuple(words), tuple(gaps), line[end:], verbatim)


def _render(line: _Line, keep: Sequence[bool], original: str) -> str:
    if all(keep):
        return original
    parts = [line.indent]
    for word, gap, kept in zip(line.words, line.gaps, keep, strict=True):
        if kept:
            parts.append((gap if len(parts) > 1 else "") + word)
    return "".join(parts) + line.trailing if len(parts) > 1 else ""


def _classify_window(
    classifier: WordClassifier, words: list[str], keep_ratio: float, pass_ratio: bool
) -> list[bool]:
    """The classifier's flags for one window; all ``True`` if it fails or breaks the contract."""
    with fail_open(
        logger, "word classifier failed; keeping the window", level=logging.WARNING
    ) as guard:
        if pass_ratio:
            flags: object = classifier(words, keep_ratio=keep_ratio)  # type: ignore[call-arg]  # checked by accepts_keep_ratio
        else:
            flags = classifier(words)
    if guard.failed:
        return [True] * len(words)
    if not isinstance(flags, list) or len(flags) != len(words):
        logger.warning(
            "word classifier returned %r for %d words; keeping them", type(flags), len(words)
        )
        return [True] * len(words)
    return [bool(flag) for flag in flags]


def compress_words(
    text: str,
    classifier: WordClassifier,
    *,
    keep_ratio: float = DEFAULT_KEEP_RATIO,
    window_words: int = 50,
    min_content_words: int = 30,
) -> str:
    """Drop the words ``classifier`` marks as droppable, keeping the text's lines and indentation.

    The classifier sees the words of compressible lines in windows of ``window_words`` and, when
    it accepts one, the ``keep_ratio``. Texts of fewer than ``min_content_words`` words are
    returned unchanged; protected words and verbatim lines are kept whatever it answers.
    """
    check_keep_ratio("keep_ratio", keep_ratio)
    checks.integer(window_words, "window_words", at_least=1)
    raw_lines = text.split("\n")
    lines = [_parse_line(line) for line in raw_lines]
    if sum(len(line.words) for line in lines) < min_content_words:
        return text
    slots = [
        (li, wi)
        for li, line in enumerate(lines)
        if not line.verbatim
        for wi in range(len(line.words))
    ]
    flags = [[True] * len(line.words) for line in lines]
    pass_ratio = accepts_keep_ratio(classifier)
    for start in range(0, len(slots), window_words):
        window = slots[start : start + window_words]
        words = [lines[li].words[wi] for li, wi in window]
        decided = _classify_window(classifier, words, keep_ratio, pass_ratio)
        for (li, wi), word, kept in zip(window, words, decided, strict=True):
            flags[li][wi] = kept or is_protected(word)
    return "\n".join(
        _render(line, f, raw) for line, f, raw in zip(lines, flags, raw_lines, strict=True)
    )
