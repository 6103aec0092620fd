"""JSON: crush long arrays of similar items and long strings; the result is still valid JSON.

A crushed array keeps its first items, its last item, and the items that stand out (carry an
error or a failing status, carry a status-like value that is rare in the array, have a
different set of keys than most, or match the query); every omitted stretch becomes one string
element saying how many items went, which (by their ``id``/``number`` fields, when they have
them) and how to get them back. A long string keeps its head and, when it is markdown, its
headings.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokenlean.shorten._indented import dumps_indented
from tokenlean.shorten._markers import Retrieval, item_marker, string_marker
from tokenlean.shorten._report import Omission

__all__ = ["MOST_ROWS", "crush_json"]

_ERROR_KEYS = frozenset({"error", "errors", "exception", "failure", "failures", "traceback"})
_STATUS_KEYS = frozenset({"status", "state", "conclusion", "result", "level", "severity"})
_MAX_NOTABLE = 50  # error and query items kept per array, at most
_BAD_STATUS = frozenset(
    {"error", "failed", "failure", "fatal", "critical", "cancelled", "timed_out", "errored"}
)
#: Key words of fields whose values say how an item stands (``status``, ``is_blocked``, ...).
_STATE_WORDS = ("status", "state", "conclusion", "result", "level", "severity", "phase", "stage")
_RARE_SHARE = 0.25  # a value held by at most this share of an array's items stands out
#: Fields that name an item, in order of preference, for the marker of dropped items.
_ID_KEYS = ("number", "id", "key", "sha", "name", "title")
_MAX_NAMED = 24  # identifiers named in one marker, at most
_MAX_HEADINGS = 40  # markdown headings kept from a cut string, at most
_DOC_LINES = 8  # a long string with this many lines is a document: shortened as one, first
_MILD_SLACK = 1.25
#: Longer arrays are searched for notable items (and dropped items for their identifiers)
#: among their first and last half of this many only: each item costs Python steps, and a
#: 50 MB array holds millions.
_SCAN_ITEMS = 20_000
#: The most head items of each long array a result keeps when its budget holds them (a JSON
#: array: then half as many, down to ``json_max_items``; the mildest cut keeps ``json_keep_head``).
MOST_ROWS = 64


@dataclass
class _Crusher:
    max_items: int
    keep_head: int
    max_string: int
    terms: Sequence[str]
    retrieval: Retrieval
    documents: Callable[[str], str | None] | None = None
    omissions: list[Omission] = field(default_factory=list)
    hinted: bool = False  # a marker above already says how to read the original back

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, list):
            return self.array(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        return value

    def string(self, value: str) -> str:
        if len(value) <= self.max_string:
            return value
        if self.documents is not None and value.count("\n") >= _DOC_LINES:
            short = self.documents(value)
            if short is not None and len(short) < len(value):
                self.omissions.append(Omission("chars", len(value) - len(short), 0, 0, "chars"))
                return short
        head = value[: self.max_string]
        rest = value[self.max_string :]
        headings = _headings(rest) if "\n#" in rest else ""
        cut = len(rest) - len(headings)
        self.omissions.append(Omission("chars", cut, 0, 0, "chars"))
        marker = string_marker(cut, self.retrieval, headings, hinted=self.hinted)
        self.hinted = True
        return head + marker

    def array(self, items: list[Any]) -> list[Any]:
        if len(items) <= self.max_items:
            return [self.value(item) for item in items]
        keep = set(range(self.keep_head)) | {len(items) - 1}
        wanted, outliers = self._notable_near_ends(items)
        keep |= set(wanted[:_MAX_NOTABLE]) | set(outliers[: self.max_items])
        out: list[Any] = []
        i = 0
        while i < len(items):
            if i in keep:
                out.append(self.value(items[i]))
                i += 1
                continue
            j = i
            while j < len(items) and j not in keep:
                j += 1
            if j - i == 1:  # one item between kept ones: its marker would cost about as much
                out.append(self.value(items[i]))
                i = j
                continue
            names = _names(items[i:j])
            out.append(item_marker(j - i, i, j - 1, self.retrieval, names, hinted=self.hinted))
            self.hinted = True
            self.omissions.append(Omission("items", j - i, 0, 0, "items"))
            i = j
        return out

    def _notable_near_ends(self, items: list[Any]) -> tuple[list[int], list[int]]:
        """:meth:`_notable` of the array, or of its :func:`_near_ends` when it is huge."""
        if len(items) <= _SCAN_ITEMS:
            return self._notable(items)
        where = _near_ends(len(items))
        wanted, outliers = self._notable([items[i] for i in where])
        return [where[i] for i in wanted], [where[i] for i in outliers]

    def _notable(self, items: list[Any]) -> tuple[list[int], list[int]]:
        """Items that carry an error, a rare status or match the query, and items shaped
        unlike most."""
        shapes = Counter(frozenset(item) for item in items if isinstance(item, dict))
        common = shapes.most_common(1)[0][0] if shapes else None
        rare = _rare_states(items)
        wanted: list[int] = []
        outliers: list[int] = []
        for i, item in enumerate(items):
            if i in rare or _carries_error(item) or (self.terms and _mentions(item, self.terms)):
                wanted.append(i)
            elif common is not None and isinstance(item, dict) and frozenset(item) != common:
                outliers.append(i)
        return wanted, outliers


def _near_ends(n: int) -> list[int]:
    """The indices of the first and last ``_SCAN_ITEMS // 2`` of ``n`` items."""
    half = _SCAN_ITEMS // 2
    return [*range(half), *range(n - half, n)]


def _rare_states(items: list[Any]) -> set[int]:
    """Items whose status-like value (``status``, ``state``, ``is_blocked``, ...) few other
    items share: ``in_progress`` among ``done``, a ``true`` among ``false``."""
    values: dict[str, Counter[Any]] = {}
    for item in items:
        if isinstance(item, dict):
            for key, value in item.items():
                if _state_like(str(key), value):
                    values.setdefault(str(key), Counter())[value] += 1
    limit = max(1, int(_RARE_SHARE * len(items)))
    out: set[int] = set()
    for key, counts in values.items():
        if len(counts) < 2:
            continue
        rare = {value for value, n in counts.items() if n <= limit}
        for i, item in enumerate(items):
            if isinstance(item, dict) and key in item and _hashable(item[key]) in rare:
                out.add(i)
    return out


def _state_like(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return True
    low = key.lower()
    return isinstance(value, str) and len(value) <= 40 and any(w in low for w in _STATE_WORDS)


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) or value is None else None


def _names(items: list[Any]) -> str:
    """The identifiers of dropped items (``646-651, 711, 712``), from the first of
    :data:`_ID_KEYS` that every one of them holds as a string or a number; ``""`` if none.
    Of a huge stretch, only the items :func:`_near_ends` are looked at."""
    total = len(items)
    if total > _SCAN_ITEMS:
        items = [items[i] for i in _near_ends(total)]
    dicts = [item for item in items if isinstance(item, dict)]
    if len(dicts) != len(items) or not dicts:
        return ""
    for key in _ID_KEYS:
        values = [item.get(key) for item in dicts]
        if all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values):
            shown = [str(v) for v in values[:_MAX_NAMED] if len(str(v)) <= 60]
            if len(shown) < min(len(values), _MAX_NAMED):
                continue
            more = total - len(shown)
            return f"{key} " + _ranges(shown) + (f" and {more} more" if more else "")
    return ""


def _ranges(values: list[str]) -> str:
    """``["646", "647", "648", "711"]`` -> ``"646-648, 711"``."""
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while (
            j + 1 < len(values)
            and values[j].isdigit()
            and values[j + 1].isdigit()
            and int(values[j + 1]) == int(values[j]) + 1
        ):
            j += 1
        parts.append(values[i] if j == i else f"{values[i]}-{values[j]}")
        i = j + 1
    return ", ".join(parts)


def _headings(text: str) -> str:
    """The markdown heading lines of ``text``, one per line (at most :data:`_MAX_HEADINGS`)."""
    out: list[str] = []
    fenced = False
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
        elif not fenced and stripped.startswith("#") and len(stripped) <= 120:
            out.append(stripped)
            if len(out) >= _MAX_HEADINGS:
                break
    return "\n".join(out)


def _carries_error(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    for key, value in item.items():
        low = str(key).lower()
        if low in _ERROR_KEYS and value not in (None, [], {}, "", 0, False):
            return True
        if low in _STATUS_KEYS and isinstance(value, str) and value.lower() in _BAD_STATUS:
            return True
    return False


def _mentions(item: Any, terms: Sequence[str]) -> bool:
    text = json.dumps(item, ensure_ascii=False, default=str).lower()
    return any(term in text for term in terms)


def _layout(body: str) -> dict[str, Any]:
    """Serializer settings that reproduce the input's layout (indented or compact)."""
    stripped = body.strip()
    if "\n" in stripped:
        second = stripped.split("\n", 2)[1]
        pad = second[: len(second) - len(second.lstrip())]
        return {"indent": "\t" if pad.startswith("\t") else max(1, len(pad))}
    compact = '":' in stripped and '": ' not in stripped
    return {"separators": (",", ":")} if compact else {}


def _serialized(value: Any, layout: dict[str, Any]) -> str:
    """``value`` as JSON in ``layout`` (an indented one through the faster writer)."""
    if "indent" in layout:
        return dumps_indented(value, layout["indent"])
    return json.dumps(value, ensure_ascii=False, **layout)


def crush_json(
    body: str,
    parsed: Any,
    *,
    tries: Sequence[tuple[int, int, int]],
    budget: float,
    estimate: Any,
    terms: Sequence[str],
    retrieval: Retrieval,
    documents: Callable[[str], str | None] | None = None,
) -> tuple[str, list[Omission]]:
    """The smallest crushed form of ``parsed`` that fits ``budget`` (or the last try's).

    In the first try, long strings of many lines (a markdown body) go through ``documents``
    (which shortens a document, or returns ``None``) instead of being cut at their head; that
    mildest form is taken if it is within :data:`_MILD_SLACK` of the budget.
    """
    layout = _layout(body)
    best: tuple[str, list[Omission]] = (body, [])
    size = None  # estimate(best[0]), measured when best changes
    for n, (max_items, keep_head, max_string) in enumerate(tries):
        docs = documents if n == 0 else None
        crusher = _Crusher(max_items, keep_head, max_string, terms, retrieval, docs)
        value = crusher.value(parsed)
        if crusher.omissions:  # a try that cut nothing is never taken: no need to write it
            text = _serialized(value, layout)
            if len(text) < len(best[0]):
                best, size = (text, crusher.omissions), None
        if size is None:
            size = estimate(best[0])
        if size <= budget * (_MILD_SLACK if n == 0 else 1.0):
            break
    return best
