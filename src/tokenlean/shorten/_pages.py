"""Accessibility trees and HTML pages from browser agents: keep what the agent can act on.

A page is mostly boilerplate (containers, layout rows, live regions) around a few elements the
agent clicks or fills. Interactive elements (buttons, links, inputs, radios, comboboxes, ...
with their ids) are always kept, with the text right under them (their labels); headings
come next, then other text while the budget lasts. Container lines with no text of their own
go first. A page re-sent after each action repeats most of the previous one: an unchanged
stretch becomes one pointer, however much boilerplate it holds.
"""

from __future__ import annotations

from collections.abc import Container, Sequence

from tokenlean.shorten._detect import is_interactive, page_role
from tokenlean.shorten._logs import dropped_lines
from tokenlean.shorten._options import ShortenSettings
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
from tokenlean.shorten._text import Lines, line_cost

__all__ = ["page_selection"]

#: Roles that only hold other elements: a line with one of these and no name says nothing.
_CONTAINERS = frozenset(
    {
        "generic", "group", "row", "rowgroup", "gridcell", "cell", "columnheader", "table",
        "list", "listitem", "LayoutTable", "LayoutTableRow", "LayoutTableCell", "section",
        "region", "navigation", "separator", "strong", "emphasis", "paragraph", "Legend",
        "ListMarker", "image", "img", "log", "status", "main", "contentinfo", "banner",
        "complementary", "form", "search", "article", "figure", "Iframe", "div", "span", "-",
        "none", "presentation",
    }
)  # fmt: skip
_HTML_STATIC = ("<script", "</script", "<style", "</style", "<meta", "<link", "<!--", "<svg")
_LABEL_DEPTH = 3  # lines right under an element that may carry its label


def page_selection(
    lines: Lines, terms: Sequence[str], seen: Container[str] | None, options: ShortenSettings
) -> tuple[Selection, float]:
    """Tiers for a page, and the budget its kept elements need on top of the usual one."""
    items = lines.items
    interactive = {i for i, line in enumerate(items) if is_interactive(line)}
    query = matching_lines(lines, terms)
    boiler = {i for i, line in enumerate(items) if _boilerplate(line) and i not in query}
    headings = {i for i, line in enumerate(items) if line.lstrip().startswith("heading ")}
    labels = _labels(items, interactive)
    must = interactive | query | ends(items)
    near = headings | labels | around(query, options.context_lines, lines.count)
    forced = dropped_lines(
        lines,
        must,
        seen,
        options,
        keep_seen=(),
        filler=set(range(lines.count)) - interactive - query,
    )
    tiers = [REST] * lines.count
    assign(tiers, near - boiler, NEAR)
    assign(tiers, must, MUST)
    for i in boiler - must:
        tiers[i] = PROSE  # last in, and back only where cheaper than a marker
    extra = sum(line_cost(items[i]) for i in must if i not in forced)
    return Selection(tiers, distances(must, lines.count), forced, {}), extra


def _boilerplate(line: str) -> bool:
    """A container with no text of its own (``generic, live='polite'``, ``row``, ``-``), or an
    HTML script, style or metadata line."""
    stripped = line.strip()
    if not stripped:
        return True
    if stripped.startswith("<"):
        return stripped.startswith(_HTML_STATIC)
    head = stripped.split(",", 1)[0]
    if "BID:" in head[:16]:
        head = head.split(" ", 1)[1] if " " in head else ""
    role = page_role(line)
    return head in _CONTAINERS or (role in _CONTAINERS and head.count(" ") == 0)


def _labels(items: Sequence[str], interactive: set[int]) -> set[int]:
    """Text lines just under an interactive element, deeper indented: its visible label."""
    out: set[int] = set()
    for i in interactive:
        depth = len(items[i]) - len(items[i].lstrip())
        for j in range(i + 1, min(len(items), i + 1 + _LABEL_DEPTH)):
            line = items[j]
            if len(line) - len(line.lstrip()) <= depth or j in interactive:
                break
            if line.strip():
                out.add(j)
    return out
