"""Word-level compression keeps structure and what agents quote (tokenlean.token_saving._words)."""

from __future__ import annotations

import logging
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenlean.token_saving._words import (
    accepts_keep_ratio,
    compress_words,
    heuristic_classifier,
    is_protected,
    make_heuristic_classifier,
)

PROSE = (
    "I think that the failure is really just caused by the way the parser handles the input, "
    "so we should probably look at the function again and then maybe run the tests once more "
    "to see whether the change actually fixes it for all of the cases that were reported."
)

PYTEST_LOG = """\
============================= FAILURES =============================
_____________________ test_parse_header _____________________

    def test_parse_header():
        value = parse_header("Content-Type: text/plain; charset=utf-8")
>       assert value == {"charset": "utf-8"}
E       AssertionError: assert {'charset': 'utf8'} == {'charset': 'utf-8'}
E         Differing items:
E         {'charset': 'utf8'} != {'charset': 'utf-8'}

tests/test_headers.py:42: AssertionError
The header parser seems to normalise the charset name before it is returned to the caller,
which is why the comparison with the expected value fails in this particular test case here.
FAILED tests/test_headers.py::test_parse_header - AssertionError: assert ...
"""


def drop_everything(words: list[str]) -> list[bool]:
    return [False] * len(words)


@pytest.mark.parametrize(
    "word",
    ["42", "3.14", "self.value", "get_order_by", "QuerySet", "django/db/models.py", "==", "!=",
     "->", "x", "FAILED", "not", "never,", "(see", "`name`", "--verbose", "E"],
)  # fmt: skip
def test_protected_words(word: str) -> None:
    assert is_protected(word)


@pytest.mark.parametrize("word", ["the", "really", "parser", "Because", "fails.", "a", "I", ","])
def test_plain_prose_words_are_droppable(word: str) -> None:
    assert not is_protected(word)


def test_heuristic_meets_the_ratio_with_prose() -> None:
    words = PROSE.split()
    for ratio in (0.3, 0.55, 0.9):
        kept = sum(heuristic_classifier(words, keep_ratio=ratio))
        assert kept <= -(-len(words) * ratio // 1)  # ceil(len * ratio)
    assert heuristic_classifier(words, keep_ratio=1.0) == [True] * len(words)


def test_heuristic_drops_stopwords_before_content_words() -> None:
    words = ["the", "parser", "of", "the", "input"]
    assert heuristic_classifier(words, keep_ratio=0.6) == [False, True, False, True, True]


def test_make_heuristic_classifier_default_and_override() -> None:
    classify = make_heuristic_classifier(0.3)
    words = PROSE.split()
    assert sum(classify(words)) < sum(classify(words, keep_ratio=0.8))
    assert accepts_keep_ratio(classify)
    with pytest.raises(ValueError, match="target_keep_ratio"):
        make_heuristic_classifier(0)


def test_accepts_keep_ratio() -> None:
    def plain(words: list[str]) -> list[bool]:
        return [True] * len(words)

    def keywords(words: list[str], **kwargs: object) -> list[bool]:
        return [True] * len(words)

    assert not accepts_keep_ratio(plain)
    assert accepts_keep_ratio(keywords)
    assert not accepts_keep_ratio(len)  # builtins without a signature: not ratio-aware


def test_the_tier_keep_ratio_reaches_the_classifier() -> None:
    seen: list[float] = []

    def classify(words: list[str], *, keep_ratio: float) -> list[bool]:
        seen.append(keep_ratio)
        return [True] * len(words)

    compress_words(PROSE, classify, keep_ratio=0.3, window_words=10)
    assert seen and set(seen) == {0.3}


def test_windows_have_the_configured_size() -> None:
    sizes: list[int] = []

    def classify(words: list[str]) -> list[bool]:
        sizes.append(len(words))
        return [True] * len(words)

    compress_words(PROSE, classify, window_words=7)
    assert sizes[:-1] == [7] * (len(sizes) - 1) and 0 < sizes[-1] <= 7
    assert sum(sizes) == len(PROSE.split())


def test_short_texts_are_left_alone() -> None:
    text = "just a few words here"
    assert compress_words(text, drop_everything, min_content_words=30) == text
    assert compress_words(text, drop_everything, min_content_words=3) != text


def test_structure_survives_even_a_classifier_that_drops_everything() -> None:
    out = compress_words(PYTEST_LOG, drop_everything, min_content_words=1)
    assert out.count("\n") == PYTEST_LOG.count("\n")
    original_lines = PYTEST_LOG.split("\n")
    for before, after in zip(original_lines, out.split("\n"), strict=True):
        if re.match(r"\s*E\s", before) or before.lstrip().startswith((">", "def ")):
            assert after == before  # pytest E lines, source markers and code kept whole
    assert "tests/test_headers.py:42: AssertionError" in out
    assert "FAILED tests/test_headers.py::test_parse_header - AssertionError: assert" in out
    assert "The header parser" not in out  # prose is what gets compressed


def test_indentation_is_kept_on_compressed_lines() -> None:
    text = "\n".join(
        f"    item {i}: the value was probably fine and nothing changed" for i in range(8)
    )
    out = compress_words(text, make_heuristic_classifier(0.3), min_content_words=1)
    assert out != text
    for i, line in enumerate(out.split("\n")):
        assert line.startswith("    ") and not line[4].isspace()
        assert f"{i}:" in line


def test_a_failing_classifier_keeps_its_window(caplog: pytest.LogCaptureFixture) -> None:
    def broken(words: list[str]) -> list[bool]:
        raise RuntimeError("model down")

    def wrong_length(words: list[str]) -> list[bool]:
        return [False]

    with caplog.at_level(logging.WARNING, logger="tokenlean.token_saving._words"):
        assert compress_words(PROSE, broken) == PROSE
        assert compress_words(PROSE, wrong_length) == PROSE  # type: ignore[arg-type]
    assert "word classifier" in caplog.text


def test_bad_settings_raise() -> None:
    with pytest.raises(ValueError, match="keep_ratio"):
        compress_words(PROSE, drop_everything, keep_ratio=1.2)
    with pytest.raises(ValueError, match="window_words"):
        compress_words(PROSE, drop_everything, window_words=0)


_WORDS = st.sampled_from(
    ["the", "value", "is", "not", "42", "x==y", "path/to/file.py", "E", "    ", "\n", " ", "\t",
     "Error:", "foo_bar", "and", "then", "we", "ran", "it", "-", "é", "\ud800"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORDS, max_size=120).map("".join), st.floats(0.05, 1.0), st.integers(1, 60))
def test_compression_invariants(text: str, ratio: float, window: int) -> None:
    out = compress_words(
        text,
        make_heuristic_classifier(),
        keep_ratio=ratio,
        window_words=window,
        min_content_words=0,
    )
    before, after = text.split("\n"), out.split("\n")
    assert len(after) == len(before)  # every newline kept
    for old, new in zip(before, after, strict=True):
        old_words, new_words = old.split(), new.split()
        if new_words:  # indentation kept on every line that still has words
            assert new.startswith(old[: len(old) - len(old.lstrip())])
        it = iter(old_words)
        assert all(word in it for word in new_words)  # kept words are a subsequence
        assert [w for w in old_words if is_protected(w)] == [
            w for w in new_words if is_protected(w)
        ]
