"""Telling content kinds apart (mini-swe-agent's output envelope and JSON are
:mod:`tokenlean.shorten._envelope`'s).

What the call that made an output asked for is read from its arguments in
:mod:`tokenlean.shorten._calls`.

Each test reads at most the first :data:`SAMPLE_LINES` lines and each line's first
:data:`SCAN_CHARS` characters, with ``str`` methods or small anchored regexes (no nested
quantifiers), so telling kinds apart stays linear whatever the input.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import compress, count, repeat
from operator import contains, itemgetter, not_, or_

from tokenlean._caches import byte_bounded
from tokenlean.shorten._code import number_prefix
from tokenlean.shorten._text import is_sentence

__all__ = [
    "INTERACTIVE_ROLES",
    "SAMPLE_LINES",
    "SCAN_CHARS",
    "is_heading",
    "is_interactive",
    "is_listing",
    "is_prose",
    "is_table_row",
    "looks_like_document",
    "looks_like_page",
    "numbered_view",
    "page_role",
    "strip_view",
    "view_content",
]

SAMPLE_LINES = 400
SCAN_CHARS = 300


# -- file views with line numbers ----------------------------------------------------------------

#: Lines a file viewer adds around the numbered lines (SWE-agent's ``open``, ``grep`` groups).
_VIEW_DECOR = ("[File: ", "(", "<<<<<", "--", "[", "<system-reminder>", "</system-reminder>")


def numbered_view(items: Sequence[str]) -> list[int] | None:
    """The length of each line's line-number prefix when ``items`` is a file view with line
    numbers (``cat -n``, ``nl``, ``grep -n``, ``sed -n`` of a numbered file, Claude Code's
    ``Read`` with ``N→``, SWE-agent's ``open`` with ``N:``); ``None`` otherwise.

    Most non-blank lines must carry a number, and the numbers must mostly go up: a log whose
    lines start with counts does not qualify.
    """
    filled = list(filter(str.strip, items[:SAMPLE_LINES]))
    numbered = rising = other = 0
    previous = -1
    for line in filled:
        found = number_prefix(line)
        if found is None:
            if not line.lstrip().startswith(_VIEW_DECOR):
                other += 1
                if 5 * other > len(filled):  # the rest cannot number four times as many
                    return None
            continue
        number, _ = found
        numbered += 1
        rising += number > previous
        previous = number
    if numbered < 3 or numbered < 4 * other or rising < 0.8 * numbered:
        return None
    return [found[1] if (found := number_prefix(line)) else 0 for line in items]


def strip_view(items: Sequence[str], prefixes: Sequence[int]) -> list[str]:
    """The lines of a numbered view without their numbers (what the file itself holds)."""
    return [line[cut:] for line, cut in zip(items, prefixes, strict=True)]


@byte_bounded(max_entries=1024)
def view_content(text: str) -> str | None:
    """What a numbered file view shows of the file, its numbers left out (``None``: ``text`` is
    no such view). Memoized: a transcript's messages are read again on every call."""
    items = text.split("\n")
    prefixes = numbered_view(items)
    return "\n".join(strip_view(items, prefixes)) if prefixes else None


# -- documents, listings and pages ----------------------------------------------------------------

_UNDERLINE = frozenset("=-")
_PROSE_LINES = 30  # a few sentence lines: a snippet or a paragraph, not a log
_PARAGRAPH = 120  # mean characters per line of text written in paragraphs
_BULLETS = ("- ", "* ", "> ")
_MAX_LABEL = 120  # a longer line ending in a colon is a sentence, not a label


def is_heading(line: str, below: str = "") -> bool:
    """A markdown heading (``# x``), or a title underlined with ``===``/``---``."""
    stripped = line.strip()
    if stripped.startswith("#"):
        level = len(stripped) - len(stripped.lstrip("#"))
        return level <= 6 and stripped[level : level + 1] == " "
    under = below.strip()
    return bool(stripped) and len(under) >= 3 and set(under) <= _UNDERLINE


def is_label(line: str, below: str = "") -> bool:
    """A line that names the indented block below it: ``0000000000401136 <main>:`` over a
    disassembly, ``Section Headers:`` over ``readelf``'s table, ``Dump of assembler code for
    function main:``."""
    return (
        len(line) <= _MAX_LABEL
        and line[:1].strip() != ""
        and line.rstrip().endswith(":")
        and below[:1] in (" ", "\t")
        and bool(below.strip())
    )


def is_table_row(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= 3 and stripped[0] == "|" and stripped[-1] == "|"


def looks_like_document(items: Sequence[str]) -> bool:
    """Markdown (headings, tables or bullets on many lines) or prose."""
    sample = list(filter(str.strip, items[:SAMPLE_LINES]))
    if len(sample) < 3:
        return is_prose(sample)
    return _marked(sample) >= 0.15 * len(sample) or is_prose(sample)


def _marked(sample: Sequence[str]) -> int:
    """How many of the (non-blank) lines are table rows, headings or bullets. C-level passes
    pick the few lines that can be (starting with ``#``, ``|`` or a bullet, or above a line of
    ``=``/``-``); each of those is then checked."""
    stripped = list(map(str.strip, sample))
    bullets = map(str.startswith, map(str.lstrip, sample), repeat(_BULLETS))
    rules = map(not_, map(str.strip, stripped, repeat("=-")))  # lines of ``=`` and ``-`` only
    candidates = set(compress(count(), map(str.startswith, stripped, repeat(("#", "|")))))
    candidates.update(compress(count(), bullets))
    candidates.update(i - 1 for i in compress(count(), rules) if i)
    return sum(1 for i in candidates if _is_marked(sample, i))


def _is_marked(sample: Sequence[str], i: int) -> bool:
    line = sample[i]
    below = sample[i + 1] if i + 1 < len(sample) else ""
    return is_table_row(line) or is_heading(line, below) or line.lstrip().startswith(_BULLETS)


def is_prose(items: Sequence[str]) -> bool:
    """Mostly sentences in paragraphs (a search snippet, an article), whatever error words it
    holds. Many short sentence-like lines are more likely a log (``worker 3: fetched ...``)."""
    sample = list(filter(str.strip, items[:SAMPLE_LINES]))
    if not sample or not _mostly(is_sentence, sample, 0.6):
        return False
    return len(sample) <= _PROSE_LINES or sum(map(len, sample)) >= _PARAGRAPH * len(sample)


def is_listing(items: Sequence[str]) -> bool:
    """A listing of distinct paths (``find``, ``ls -R``, ``git ls-files``, a glob), or of
    entries one per line with a path last (``ls -l``, ``git status --short``, PowerShell's
    ``Get-ChildItem``)."""
    sample = list(map(str.rstrip, filter(str.strip, items[:SAMPLE_LINES])))
    if len(sample) < 5:
        return False
    return _mostly(_is_listed, sample, 0.8)


def _is_listed(line: str) -> bool:
    return _is_path(line.lstrip()) or _is_entry(line)


def _mostly(test: Callable[[str], bool], sample: Sequence[str], share: float) -> bool:
    """Whether at least ``share`` of ``sample`` passes ``test``; it stops at the line that
    leaves too few to pass (most outputs are not what is asked after a few lines)."""
    need, left = share * len(sample), len(sample)
    for line in sample:
        if not test(line):
            left -= 1
            if left < need:
                return False
    return True


#: A long listing's entry: ``ls -l``'s mode and link count, or PowerShell's mode column and a
#: date; the name comes last.
_ENTRY = re.compile(r"[-dlbcps][-rwxsStT]{9}[.@+]?\s+\d+\s|[-d][-a][-r][-h][-s][-l]\s+\d")
#: ``git status --short``: two status letters (not both blank), a space, one path (quoted when
#: it holds a space, ``old -> new`` for a rename).
_STATUS = re.compile(r"(?! {2})[ MADRCUT?!]{2} (\S+(?: -> \S+)?|\".*\")$")


def _is_entry(line: str) -> bool:
    if len(line) > SCAN_CHARS:
        return False
    return _ENTRY.match(line) is not None or _STATUS.match(line) is not None


def _is_path(line: str) -> bool:
    if " " in line or len(line) > SCAN_CHARS:
        # an ls -R heading (./src:), or a row of names in ls's columns
        return (line.endswith(":") and "/" in line and len(line) <= SCAN_CHARS) or _is_row(line)
    return "/" in line or ("." in line.strip(".") and not line[:1].isdigit()) or line == ".:"


#: A row of ``ls``'s columns: two names or more, two blanks or more between them.
_NAME = r"[\w.@+~-]+[/*@|=]?"
_ROW = re.compile(rf"\s*{_NAME}(?: {{2,}}{_NAME})+\s*")


def _is_row(line: str) -> bool:
    """A row of file names in columns (``ls``, ``ls -R``), one of them at least with an
    extension or a folder's slash: not a table of words or numbers."""
    if len(line) > SCAN_CHARS or _ROW.fullmatch(line) is None:
        return False
    names = line.split()
    if 2 * sum(1 for name in names if name[:1].isdigit()) > len(names):
        return False  # a row of numbers
    return any(_FILE_NAME.search(name) or name.endswith("/") for name in names)


_FILE_NAME = re.compile(r"[^.]\.[A-Za-z]\w{0,9}$")


#: Roles of elements an agent can act on, in accessibility trees.
INTERACTIVE_ROLES = frozenset(
    {
        "button", "link", "textbox", "searchbox", "combobox", "checkbox", "radio", "switch",
        "slider", "spinbutton", "menuitem", "menuitemcheckbox", "menuitemradio", "option", "tab",
        "treeitem", "listbox", "textarea", "input", "select",
    }
)  # fmt: skip
_BID = re.compile(r"\s{0,80}(?:BID:\w{1,12} |\[\w{1,12}\] |- )(\w{1,24})")
_HTML_INTERACTIVE = ("<a ", "<button", "<input", "<select", "<option", "<textarea", "<form")


def page_role(line: str) -> str | None:
    """The role of an accessibility-tree line (``BID:a12 button Submit``, ``[a12] link x``,
    ``- button "Submit" [ref=e3]``), or ``None``."""
    match = _BID.match(line, 0, SCAN_CHARS)
    return match.group(1) if match else None


def is_interactive(line: str) -> bool:
    """An element the agent can act on: a tree line with a ``BID:``, or with an id and an
    interactive role, or an HTML form control or link."""
    stripped = line.lstrip()
    if stripped.startswith("<"):
        head = stripped[:SCAN_CHARS]
        return any(tag in head for tag in _HTML_INTERACTIVE)
    if stripped.startswith("BID:"):
        return True  # only elements the agent can target get a ``BID:`` (labels included)
    role = page_role(line)
    if role is None or role not in INTERACTIVE_ROLES:
        return False
    return stripped.startswith("[") or "[ref=" in line


def looks_like_page(items: Sequence[str]) -> bool:
    """An accessibility tree with element ids, or an HTML page."""
    sample = list(filter(str.strip, items[:SAMPLE_LINES]))
    if len(sample) < 10:
        return False
    heads = map(itemgetter(slice(0, 120)), sample)
    ids = sum(
        map(or_, map(contains, heads, repeat("BID:")), map(contains, sample, repeat("[ref=")))
    )
    tags = sum(map(str.startswith, map(str.lstrip, sample), repeat("<")))
    return ids >= 0.1 * len(sample) or tags >= 0.4 * len(sample)
