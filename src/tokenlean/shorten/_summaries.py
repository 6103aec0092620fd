"""Which lines of a log are summaries: counts of passed and failed tests, ``Ran N tests``,
``OK``/``FAILED``, ``=== title ===`` rules.

:func:`is_summary` reads one line; :func:`summaries_among` many, first narrowed in C-level passes
to those that may be one (a log of errors makes every line a candidate).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import compress, repeat
from operator import contains, itemgetter, not_, or_

__all__ = ["SUMMARY_COUNT", "is_summary", "summaries_among"]

#: ``\d(?<!\d\d)``: a digit with none before it, so each digit run is tried once, not from each
#: of its digits; it comes first so that the search skips to digits in C (a pattern opening
#: with a lookbehind is tried at every character, three times as slow on a line of prose).
SUMMARY_COUNT = re.compile(
    r"\d(?<!\d\d)\d* (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|tests?"
    r"|problems?|issues?|violations?|files? (?:changed|checked|reformatted|left))\b"
)
_SUMMARY_START = re.compile(r"Ran \d+ tests?|OK\b|FAILED\b|All \w+ passed|Found \d+|<returncode>")
_SUMMARY_CHARS = 300  # a summary line is short
_FEW_SUMMARIES = 16  # more candidates than this are narrowed in C-level passes first
#: How a summary may start (``_SUMMARY_START``, and a ``=== title ===``).
_SUMMARY_HEADS = ("Ran ", "OK", "FAILED", "All ", "Found ", "<returncode>", "===")
#: Digits as "0", and the first letters of the words a count names (``SUMMARY_COUNT``) as "a".
_COUNT_SHAPE = bytes.maketrans(b"0123456789pfesxwdtiv", b"0" * 10 + b"a" * 10)


def is_summary(line: str) -> bool:
    """Counts of passed/failed/..., ``Ran N tests``, ``OK``/``FAILED``, ``=== title ===``."""
    head = line[:_SUMMARY_CHARS]
    if _SUMMARY_START.match(head) or "Successfully" in head:
        return True
    if head.startswith("===") and " " in head and head.rstrip().endswith("==="):
        return True
    return SUMMARY_COUNT.search(head) is not None


def summaries_among(items: list[str], candidates: set[int]) -> set[int]:
    """The ``candidates`` that are summaries. Many of them (a log of errors: every line is
    one) are first narrowed in C-level passes to those that may be: those starting as a
    summary does, or holding "Successfully", or a number then a word a count may name."""
    chosen = sorted(candidates)
    if len(chosen) > _FEW_SUMMARIES:
        heads = list(map(itemgetter(slice(0, _SUMMARY_CHARS)), map(items.__getitem__, chosen)))
        maybe = map(or_, map(str.startswith, heads, repeat(_SUMMARY_HEADS)), _counted(heads))
        chosen = list(compress(chosen, map(or_, maybe, _has("Successfully", heads))))
    return {i for i in chosen if is_summary(items[i])}


def _counted(heads: list[str]) -> Iterator[bool]:
    r"""Whether each line (no newline in any) may hold a count: a digit, a blank and a word a
    count names, or a character outside ASCII (``\d`` matches any of Unicode's digits)."""
    marked = "\n".join(heads).encode("ascii", "replace")  # one "?" per other character
    shaped = marked.translate(_COUNT_SHAPE).decode("ascii").split("\n")
    return map(or_, _has("0 a", shaped), map(not_, map(str.isascii, heads)))


def _has(needle: str, texts: list[str]) -> Iterator[bool]:
    return map(contains, texts, repeat(needle))
