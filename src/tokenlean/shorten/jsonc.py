"""JSON: crush long arrays of similar items and long strings; the result is still valid JSON.

A crushed array keeps its first items, its last item, and the items that stand out (carry an
error or a failing status, have a different set of keys than most, or match the query); every
omitted stretch becomes one string element saying how many items went and how to get them back.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tokenlean.shorten.markers import Retrieval, item_marker, string_marker
from tokenlean.shorten.report import Omission

_ERROR_KEYS = frozenset({"error", "errors", "exception", "failure", "failures", "traceback"})
_STATUS_KEYS = frozenset({"status", "state", "conclusion", "result", "level", "severity"})
_MAX_NOTABLE = 50  # error and query items kept per array, at most
_BAD_STATUS = frozenset(
    {"error", "failed", "failure", "fatal", "critical", "cancelled", "timed_out", "errored"}
)


@dataclass
class _Crusher:
    max_items: int
    keep_head: int
    max_string: int
    terms: Sequence[str]
    retrieval: Retrieval
    omissions: list[Omission] = field(default_factory=list)

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
        cut = len(value) - self.max_string
        self.omissions.append(Omission("chars", cut, 0, 0, "chars"))
        return value[: self.max_string] + string_marker(cut, self.retrieval)

    def array(self, items: list[Any]) -> list[Any]:
        if len(items) <= self.max_items:
            return [self.value(item) for item in items]
        keep = set(range(self.keep_head)) | {len(items) - 1}
        wanted, outliers = self._notable(items)
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
            out.append(item_marker(j - i, i, j - 1, self.retrieval))
            self.omissions.append(Omission("items", j - i, 0, 0, "items"))
            i = j
        return out

    def _notable(self, items: list[Any]) -> tuple[list[int], list[int]]:
        """Items that carry an error or match the query, and items shaped unlike most."""
        shapes = Counter(frozenset(item) for item in items if isinstance(item, dict))
        common = shapes.most_common(1)[0][0] if shapes else None
        wanted: list[int] = []
        outliers: list[int] = []
        for i, item in enumerate(items):
            if _carries_error(item) or (self.terms and _mentions(item, self.terms)):
                wanted.append(i)
            elif common is not None and isinstance(item, dict) and frozenset(item) != common:
                outliers.append(i)
        return wanted, outliers


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


def crush_json(
    body: str,
    parsed: Any,
    *,
    tries: Sequence[tuple[int, int, int]],
    budget: float,
    estimate: Any,
    terms: Sequence[str],
    retrieval: Retrieval,
) -> tuple[str, list[Omission]]:
    """The smallest crushed form of ``parsed`` that fits ``budget`` (or the last try's)."""
    layout = _layout(body)
    best: tuple[str, list[Omission]] = (body, [])
    for max_items, keep_head, max_string in tries:
        crusher = _Crusher(max_items, keep_head, max_string, terms, retrieval)
        text = json.dumps(crusher.value(parsed), ensure_ascii=False, **layout)
        if crusher.omissions and len(text) < len(best[0]):
            best = (text, crusher.omissions)
        if estimate(best[0]) <= budget:
            break
    return best
