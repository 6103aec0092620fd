"""The detectors rewritten as C-level passes give the results of their plain, line-by-line forms.

Each reference below is the earlier form (one Python step per line or character); random texts
(hypothesis) mix code, logs, markdown, prose, numbered views and arbitrary Unicode, so only the
cost of telling kinds apart changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenlean.shorten import query_terms
from tokenlean.shorten._calls import runs_own_script
from tokenlean.shorten._code import (
    _CODE_END,
    _CODE_START,
    _COMMENTS,
    _IMPORT,
    _LOG_HINTS,
    _OUTLINE,
    _TRACE_START,
    _strip_number,
    looks_like_code,
    number_prefix,
    outline_lines,
    prose_lines,
    strip_number,
)
from tokenlean.shorten._detect import (
    is_heading,
    is_prose,
    is_table_row,
    looks_like_document,
    numbered_view,
)
from tokenlean.shorten._seen import _lines_of
from tokenlean.shorten._text import is_sentence, letter_count

_LINES = [
    "def handle(self, request):",
    "    return self.get(request) or None",
    "        value = compute(a, b)",
    "    # the reason this is done here is that we need to keep going now",
    '    """Docstring that talks about what the function does in plain words."""',
    "class Model(Base):",
    "import os",
    "  12\tx = 1",
    "13:    y = 2",
    "src/app.py:14:    z = 3",
    "# Heading",
    "## Sub heading here",
    "Title",
    "=====",
    "-----",
    "| a | b |",
    "- a bullet point",
    "* another bullet",
    "> a quote",
    "This is a plain sentence written by someone who likes to write prose.",
    "Traceback (most recent call last):",
    '  File "/x/y.py", line 3, in <module>',
    "ValueError: bad value",
    "+ set -e",
    "test_foo.py::test_bar PASSED",
    "2024-01-01 12:00:00 INFO starting worker 3 now",
    "[File: /repo/a.py (120 lines total)]",
    "",
    "   ",
    "Ünïcödé ﬁle näme with İ and ǅ letters and more words here ok",
    "x²  ½ Ⅻ ſ K",
]
_TEXT = st.lists(st.one_of(st.sampled_from(_LINES), st.text(max_size=80)), max_size=60)


def _looks_like_code(items: Sequence[str], sample: int = 400) -> bool:
    body = [strip_number(line) for line in items[:sample] if line.strip()]
    if len(body) < 8:
        return False
    code = keywords = logs = indented = prose = 0
    commented = prose_lines(body)
    for k, line in enumerate(body):
        stripped = line.strip()
        if not commented[k] and not stripped.startswith(_COMMENTS) and is_sentence(stripped):
            prose += 1
        inner = line[:1] in (" ", "\t")
        indented += inner
        if stripped.startswith(_OUTLINE + _CODE_START):
            code += 1
            keywords += 1
        elif inner and (stripped.endswith(_CODE_END) or " = " in stripped):
            code += 1
        if line.startswith(_TRACE_START) or any(hint in line for hint in _LOG_HINTS):
            logs += 1
    n = len(body)
    shaped = indented >= 0.2 * n or keywords >= 0.5 * n
    return code >= 0.45 * n and shaped and logs <= 0.05 * n and prose < 0.25 * n


def _looks_like_document(items: Sequence[str]) -> bool:
    sample = [line for line in items[:400] if line.strip()]
    if len(sample) < 3:
        return is_prose(sample)
    marked = sum(
        1
        for i, line in enumerate(sample)
        if is_table_row(line)
        or is_heading(line, sample[i + 1] if i + 1 < len(sample) else "")
        or line.lstrip().startswith(("- ", "* ", "> "))
    )
    return marked >= 0.15 * len(sample) or is_prose(sample)


def _numbered_view(items: Sequence[str]) -> list[int] | None:
    numbered = rising = other = 0
    previous = -1
    for line in items[:400]:
        if not line.strip():
            continue
        found = number_prefix(line)
        if found is None:
            decor = ("[File: ", "(", "<<<<<", "--", "[", "<system-reminder>", "</system-reminder>")
            if not line.lstrip().startswith(decor):
                other += 1
            continue
        numbered += 1
        rising += found[0] > previous
        previous = found[0]
    if numbered < 3 or numbered < 4 * other or rising < 0.8 * numbered:
        return None
    return [found[1] if (found := number_prefix(line)) else 0 for line in items]


def _is_sentence(line: str, scan: int = 300) -> bool:
    head = line.strip()[:scan]
    if head.startswith(('File "', "at ", "Traceback")) or head.count(" ") < 6:
        return False
    letters = sum(1 for ch in head if ch.isalpha())
    return letters >= 0.6 * len(head) and any(ch.islower() for ch in head[:40])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(_TEXT)
def test_line_detectors_match_their_plain_forms(items: list[str]) -> None:
    assert looks_like_code(items) == _looks_like_code(items)
    assert looks_like_document(items) == _looks_like_document(items)
    assert numbered_view(items) == _numbered_view(items)
    for line in items:
        assert is_sentence(line) == _is_sentence(line)
        assert _strip_number("", line, 1) == strip_number(line)
        assert letter_count(line) == sum(1 for ch in line if ch.isalpha())


def _runs_own_script(command: str) -> bool:
    import re

    words = [w.strip("\"'") for w in re.split(r"[\s;&|()]+", command[:2000]) if w]
    runners = {"pytest", "py.test", "tox", "nox", "pip", "pip3", "make", "cargo", "npm", "yarn"}
    runners |= {"pnpm", "mvn", "gradle", "go", "manage.py", "runtests.py", "setup.py", "-m"}
    interpreters = {"python", "python3", "node", "ruby", "bash", "sh", "perl", "php"}
    if any(w.rsplit("/", 1)[-1] in runners for w in words):
        return False
    for k, word in enumerate(words):
        after = words[k + 1] if k + 1 < len(words) else ""
        if word.rsplit("/", 1)[-1] in interpreters and (
            after.endswith((".py", ".js", ".mjs", ".rb", ".sh", ".pl", ".php")) or after == "-c"
        ):
            return True
        if word.startswith("./") and len(word) > 2 and (k == 0 or words[k - 1] not in ("cd",)):
            return True
    return False


_WORDS = [
    "python",
    "python3",
    "/usr/bin/python",
    "x.py",
    "-c",
    "cd",
    "./run",
    "./",
    "pytest",
    "bash",
    "s.sh",
    "'a.py'",
    ";",
    "&&",
    "|",
    "(",
    "echo",
    "ls",
    "-m",
    '"./x"',
    " ",
]


def _terms_reference(query: Any, code_only: bool) -> list[str]:
    """The earlier loop (a chunk met twice was read twice) with the earlier code-like test."""
    from tokenlean.shorten._query import _CHUNK, _STOP, _terms_of, query_text

    def code_like(chunk: str) -> bool:
        if any(ch in chunk for ch in "_./") or any(ch.isdigit() for ch in chunk):
            return len(chunk) >= 3
        return any(ch.isupper() for ch in chunk[1:]) and any(ch.islower() for ch in chunk)

    terms: list[str] = []
    seen: set[str] = set()
    for match in _CHUNK.finditer(query_text(query)):
        chunk = match.group().strip(".:-/")
        if code_only and not code_like(chunk):
            continue
        for term in _terms_of(chunk):
            low = term.lower()
            if low not in seen and low not in _STOP:
                seen.add(low)
                terms.append(low)
                if len(terms) >= 24:
                    return terms
    return terms


_CHUNKS = [
    "getOrder",
    "get_order",
    "The",
    "the",
    "a.b.c",
    "x/y.py",
    "ab",
    "IO",
    "ǅx",
    "Xİ",
    "ſK",
    "x²",
    "12",
    "v1.2",
    "path::Cls::test",
    "--flag",
    "Ünï",
    "camelCase",
    "ALLCAPS",
]


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(_WORDS), st.text(max_size=12)), max_size=40),
    st.lists(st.one_of(st.sampled_from(_CHUNKS), st.text(max_size=12)), max_size=60),
)
def test_command_and_query_readers_match_their_plain_forms(
    words: list[str], chunks: list[str]
) -> None:
    command = " ".join(words)
    assert runs_own_script(command) == _runs_own_script(command)
    query = " ".join(chunks)
    for code_only in (False, True):
        assert query_terms(query, code_only=code_only) == _terms_reference(query, code_only)


def _prose_lines(items: Sequence[str]) -> list[bool]:
    """The earlier walk over every line."""
    out = [False] * len(items)
    quote: str | None = None
    for i, line in enumerate(items):
        stripped = strip_number(line).strip()
        opens = [q for q in ('"' * 3, "'" * 3) if stripped.count(q) % 2 == 1]
        if quote is not None:
            out[i] = True
            if quote in opens:
                quote = None
        elif opens:
            out[i] = stripped.startswith((opens[0], "r" + opens[0], "f" + opens[0]))
            quote = opens[0] if out[i] else None
        else:
            out[i] = stripped.startswith(("#", "//", "/*", "* ", "*/"))
    return out


_DOC_LINES = [
    '"' * 3,
    "'" * 3,
    '    """Opens a docstring',
    "    r'''raw docstring opens",
    '    f"""x""" and """ again',
    'x = """',
    "  12\t'''",
    "closes it '''",
    'ends """',
    "* a bullet or a comment",
    "*/",
    "// c comment",
    "    def f(x):",
    "async def g():",
    "  7:class K:",
    "from m import (",
    "pub use m::{",
    "def f(",
    ")",
    "};",
]


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_DOC_LINES + _LINES), st.text(max_size=40)), max_size=60))
def test_code_line_readers_match_their_plain_forms(items: list[str]) -> None:
    assert prose_lines(items) == _prose_lines(items)
    opens = [strip_number(line).lstrip() for line in items]
    plain = {i for i, s in enumerate(opens) if s.startswith(_OUTLINE) or _IMPORT.match(s)}
    outline = outline_lines(items)
    assert plain <= outline
    for k in outline - plain:  # the rest of a declaration opened above it
        assert any(opens[i].rstrip().endswith(("(", "{")) for i in plain if 0 < k - i <= 40)
    for min_chars in (0, 8):
        kept = frozenset(s for s in (line.strip() for line in "\n".join(items).split("\n")))
        assert _lines_of("\n".join(items), min_chars) == {s for s in kept if len(s) >= min_chars}
