"""Source files and file views: keep the outline and the parts the query is about.

The outline is every line that opens a definition (``def``, ``class``, decorators, ``function``,
``func``, ``fn``, type and interface declarations, ...); around query matches a few lines of
context are kept; the rest of each body goes first. Line-number prefixes (``cat -n``, ``nl``,
``grep -n``, SWE-agent's ``123:``) are looked through.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Sequence
from itertools import compress, count, repeat
from operator import and_, gt, itemgetter, le, not_, or_

from tokenlean.shorten._logs import dropped_lines
from tokenlean.shorten._options import ShortenSettings
from tokenlean.shorten._prefixes import Prefixes
from tokenlean.shorten._query import matching_lines
from tokenlean.shorten._selection import (
    MUST,
    NEAR,
    PROSE,
    REST,
    Selection,
    around,
    assign,
    distances,
    ends,
)
from tokenlean.shorten._text import Lines, is_sentence, line_cost

__all__ = [
    "code_selection",
    "looks_like_code",
    "number_prefix",
    "outline_lines",
    "prose_lines",
    "strip_number",
]

_NUMBERED = re.compile(r"\s{0,8}\d{1,7}(?:[:\u2192-]|\t| {1,2}(?=\S))")
#: A view's line number: ``  12→`` (Claude Code's Read), ``    12\t`` (``cat -n``, ``nl``),
#: ``12:`` / ``12-`` (``grep -n`` matches and context, SWE-agent's ``open``).
_VIEW_NUMBER = re.compile(r" {0,10}(\d{1,7})(?:\u2192|\t|:|-)")
#: ``path:12:`` / ``path-12-``: ``grep -rn`` over several files.
_PATH_NUMBER = re.compile(r"[^\s:]{1,300}[:-](\d{1,7})[:-]")
_OUTLINE = (
    "def ",
    "async def ",
    "class ",
    "@",
    "function ",
    "func ",
    "fn ",
    "pub ",
    "mod ",
    "struct ",
    "impl ",
    "interface ",
    "type ",
    "enum ",
    "trait ",
    "module ",
    "export ",
    "public ",
    "private ",
    "protected ",
    "static ",
    "package ",
    "namespace ",
)
_CODE_START = (
    "import ",
    "from ",
    "return",
    "if ",
    "elif ",
    "else",
    "for ",
    "while ",
    "try:",
    "except",
    "finally:",
    "with ",
    "raise ",
    "assert ",
    "yield",
    "#",
    "//",
    "/*",
    "*",
    "}",
    "{",
    ")",
    "]",
    "const ",
    "let ",
    "var ",
    "self.",
    "pass",
    "break",
    "continue",
    "switch",
    "case ",
    '"""',
)
_TRIPLES = ('"' * 3, "'" * 3)
_COMMENT_OPENS = ("#", "//", "/*", "* ", "*/")  # a comment line outside docstrings
_COMMENTS = ("#", "//", "/*", "*", '"' * 3, "'" * 3, "--", ";", "<!--")
_CODE_END = (":", "{", "}", ";", ",", "(", ")", "[", "]", '"""')
_LOG_HINTS = (
    "Traceback (most",
    " ... ok",
    "PASSED",
    "FAILED",
    "ERROR:",
    "Error: ",
    "Exception: ",
    " INFO ",
    " DEBUG ",
    " WARN",
)
_LOG_HINT = re.compile("|".join(map(re.escape, _LOG_HINTS)))  # one literal alternation: linear
_TRACE_START = (
    "+ ",
    "++ ",
    "$ ",
    ">>> ",
    "\tat ",
    "    at ",
    "[info]",
    "[error]",
    "[warn]",
    "[success]",
    "[debug]",
    "[INFO]",
    "[ERROR]",
    "[WARN",
)


#: ``_strip_number("", line, 1)`` is :func:`strip_number` as one C-level call.
_strip_number = re.compile(rf"\A(?:{_NUMBERED.pattern})").sub
_OPENINGS = Prefixes(_OUTLINE + _CODE_START)
_OUTLINES = Prefixes(_OUTLINE)
_TRACES = Prefixes(_TRACE_START)


def _unnumbered(items: Iterable[str]) -> list[str]:
    """Each line without a line-number prefix: only the lines whose first character after any
    blanks is a digit (``\\d``: a decimal one) can have one, and only they are matched."""
    out = list(items)
    numbered = map(str.isdecimal, map(itemgetter(slice(0, 1)), map(str.lstrip, out)))
    for i in compress(count(), numbered):
        out[i] = _strip_number("", out[i], 1)
    return out


def strip_number(line: str) -> str:
    """``line`` without a leading line-number prefix."""
    match = _NUMBERED.match(line)
    return line[match.end() :] if match else line


def number_prefix(line: str) -> tuple[int, int] | None:
    """``(number, prefix length)`` when ``line`` starts with a file view's line number."""
    match = _VIEW_NUMBER.match(line) or _PATH_NUMBER.match(line)
    if match is None:
        return None
    rest = line[match.end() : match.end() + 8]
    if rest[:1].isdigit() and ":" in rest:  # ``path:12:5:``: a linter's message, not a view
        return None
    return int(match.group(1)), match.end()


def looks_like_code(items: Sequence[str], sample: int = 400) -> bool:
    """True when most non-blank lines of the first ``sample`` read as source code."""
    body = _unnumbered(filter(str.strip, items[:sample]))
    n = len(body)
    if n < 8:
        return False
    # the tests run cheapest first, each a C-level pass over the lines, and stop at the first
    # that fails: most outputs are not code and never reach the costly prose test
    stripped = list(map(str.strip, body))
    opens = _OPENINGS.starting(stripped)
    inner = list(map(str.startswith, body, repeat((" ", "\t"))))
    keywords = sum(opens)
    shaped = sum(inner) >= 0.2 * n or keywords >= 0.5 * n
    plain = compress(stripped, map(gt, inner, opens))  # indented, opening with no keyword
    code = keywords + sum(1 for line in plain if line.endswith(_CODE_END) or " = " in line)
    if code < 0.45 * n or not shaped:
        return False
    traced = _TRACES.starting(body)
    hinted: Iterable[bool] = repeat(False)
    if any(map("\n".join(body).__contains__, _LOG_HINTS)):  # rare in code: then line by line
        hinted = map(bool, map(_LOG_HINT.search, body))
    if sum(map(or_, traced, hinted)) > 0.05 * n:
        return False
    # prose outside comments: a document that happens to be indented (a sentence has at least
    # six spaces, so only such lines are read)
    uncommented = map(not_, map(str.startswith, stripped, repeat(_COMMENTS)))
    spaced = map(le, repeat(6), map(str.count, stripped, repeat(" ")))
    sentences = [
        k for k in compress(count(), map(and_, uncommented, spaced)) if is_sentence(stripped[k])
    ]
    if len(sentences) < 0.25 * n:  # too few even before comments and docstrings are told apart
        return True
    commented = prose_lines(body)
    return sum(1 for k in sentences if not commented[k]) < 0.25 * n


def outline_lines(items: Sequence[str]) -> set[int]:
    """The lines opening a definition (C-level passes over the lines), with the rest of a
    declaration spread over several lines: a signature's parameters, the names an import or
    a re-export lists (``pub use m::{``, ``def f(``), never a body."""
    stripped = list(map(str.lstrip, _unnumbered(items)))
    opens = set(compress(count(), _OUTLINES.starting(stripped)))
    opens.update(compress(count(), map(_IMPORT.match, stripped)))
    out = set(opens)
    for i in opens:
        line = stripped[i].rstrip()
        if not line.endswith("(") and not (line.endswith("{") and _IMPORT.match(line)):
            continue
        depth = _depth(line)
        for k in range(i + 1, min(i + 1 + _MOST_CONTINUED, len(items))):
            if depth <= 0:
                break
            out.add(k)
            depth += _depth(stripped[k])
    return out


#: an import or re-export: ``import x``, ``from m import (``, ``use a::{``, ``pub use m::{``,
#: ``export {``, Go's ``import (`` (a prefix match: linear)
_IMPORT = re.compile(
    r"(?:import [\w{(*\"']|from [\w.]+ import |(?:pub(?:\([\w ]+\))? )?use [\w:]+(?:::|;)"
    r"|export [{*])"
)
_MOST_CONTINUED = 40  # lines of one declaration kept with it


def _depth(line: str) -> int:
    return sum(map(line.count, "([{")) - sum(map(line.count, ")]}"))


def prose_lines(items: Sequence[str]) -> list[bool]:
    """Which lines are comments or docstring text (read last when the budget is tight)."""
    stripped = list(map(str.strip, _unnumbered(items)))
    # outside docstrings a line is prose when it opens as a comment (one C-level pass); only
    # the lines holding triple quotes are walked, to find where docstrings open and close
    out = list(map(str.startswith, stripped, repeat(_COMMENT_OPENS)))
    triples = map(or_, *(map(str.__contains__, stripped, repeat(q)) for q in _TRIPLES))
    quote: str | None = None
    start = 0  # the first line inside the open docstring
    for i in compress(count(), triples):
        line = stripped[i]
        opens = [q for q in _TRIPLES if line.count(q) % 2 == 1]
        if quote is not None:
            if quote in opens:  # it closes here: every line from its first is prose
                out[start : i + 1] = repeat(True, i + 1 - start)
                quote = None
        elif opens:
            out[i] = line.startswith((opens[0], "r" + opens[0], "f" + opens[0]))
            quote, start = (opens[0], i + 1) if out[i] else (None, start)
    if quote is not None:  # never closed: prose to the end
        out[start:] = repeat(True, len(out) - start)
    return out


def _nearest_within(
    items: Sequence[str], region: set[int], anchors: set[int], budget: float
) -> set[int]:
    """The lines of ``region`` nearest to an anchor whose lines together cost at most
    ``budget``."""
    dist = distances(anchors, len(items))
    out: set[int] = set()
    spent = 0.0
    for i in sorted(region, key=lambda k: (dist[k], k)):
        spent += line_cost(items[i])
        if spent > budget:
            break
        out.add(i)
    return out


def code_selection(
    lines: Lines,
    terms: Sequence[str],
    seen: Container[str] | None,
    options: ShortenSettings,
    *,
    view: list[str] | None = None,
    view_tokens: int | None = None,
) -> Selection:
    """Tiers for source code: outline and query matches first, then their surroundings (for a
    file view with line numbers, ``view`` holds its lines without the numbers, and the region
    around each match is kept, nearest first, up to ``view_tokens``: by default
    ``view_keep_tokens``)."""
    query = matching_lines(lines, terms)
    outline = outline_lines(lines.items)
    prose = prose_lines(lines.items)
    must = outline | query | {i for i in ends(lines.items) if not prose[i]}
    near = around(query, options.code_context_lines, lines.count)
    near |= {i + 1 for i in outline if i + 1 < lines.count}  # a signature's next line
    if view is not None:  # the region the query names, nearest first, up to a view's size
        region = around(query, options.view_context_lines, lines.count)
        near |= region
        most = options.view_keep_tokens if view_tokens is None else view_tokens
        must |= _nearest_within(lines.items, region, query, most)
    forced = dropped_lines(lines, query | outline, seen, options, keep_seen=(), content=view)
    tiers = [REST] * lines.count
    assign(tiers, near, NEAR)
    for i, is_prose in enumerate(prose):
        if is_prose:
            tiers[i] = PROSE
    assign(tiers, must, MUST)
    return Selection(tiers, distances(query | ends(lines.items), lines.count), forced, {})
