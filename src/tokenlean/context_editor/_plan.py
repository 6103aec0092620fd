"""Planning which results to clear: whole batches of the oldest eligible results, never fewer.

:func:`plan_ledger` plans on a :class:`~tokenlean.context_editor._ledger.RequestLedger` that a
caller keeps from call to call (work proportional to what is new); :func:`plan_clearing` builds
one for a single request. Both grow the cleared set the same way.
"""

from __future__ import annotations

import bisect
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tokenlean.context_editor._cache import CacheModel
from tokenlean.context_editor._clearing import apply_clearing
from tokenlean.context_editor._config import (
    ClearedToolResult,
    Clearing,
    ContextEdit,
    ContextEditorSettings,
    RequestView,
    TokenEstimator,
)
from tokenlean.context_editor._ledger import Judged, RequestLedger
from tokenlean.shorten import CAPABILITY as SHORTENED
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter, count_request
from tokenlean.transcript import Message, ToolCall, mark_of


@dataclass(frozen=True, slots=True)
class ClearingPlan:
    """The cleared set for this call (earlier entries first) and the edit that grew it, if any."""

    cleared: Mapping[str, Clearing] = field(default_factory=dict)
    edit: ContextEdit | None = None


def plan_clearing(
    request: RequestView,
    *,
    config: ContextEditorSettings,
    previous: Mapping[str, Clearing],
    skip: frozenset[str] = frozenset(),
    estimate: TokenEstimator | None = None,
    counter: TokenCounter | None = None,
) -> ClearingPlan:
    """The cleared set for ``request``: every earlier clearing, plus new whole batches if due.

    ``skip`` holds tool call ids cleared by someone else (never cleared twice); ``counter``
    sizes single results (for ``min_saved_tokens`` and the cache model), ``estimate`` the request
    (by default: ``counter`` over the system prompt, tool schemas and messages).
    """
    ledger = RequestLedger(counter or DEFAULT_COUNTER)
    ledger.extend(request.messages)
    return plan_ledger(
        ledger,
        config=config,
        previous=previous,
        system=request.system,
        tools=request.tools,
        skip=skip,
        estimate=estimate,
    )


def plan_ledger(
    ledger: RequestLedger,
    *,
    config: ContextEditorSettings,
    previous: Mapping[str, Clearing],
    system: str | None = None,
    tools: Sequence[Mapping[str, object]] = (),
    skip: frozenset[str] = frozenset(),
    estimate: TokenEstimator | None = None,
    fixed: int | None = None,
) -> ClearingPlan:
    """:func:`plan_clearing` on a ledger, which it leaves sending the planned cleared set.

    ``fixed`` is the tokens of the system prompt and tool schemas when the caller knows them.
    """
    if previous is not ledger.previous:  # the same mapping as last call: nothing to redo
        cleared = {key: value for key, value in previous.items() if key in ledger.result_at}
        ledger.set_cleared(cleared)
        ledger.previous = previous
    cleared = ledger.cleared  # replaced, never changed in place: safe to hand out
    if fixed is None:
        fixed = count_request((), ledger.counter, system=system, tools=tools)

    def size() -> int:
        if estimate is None:
            return fixed + ledger.total
        return estimate(RequestView(tuple(ledger.sent()), system, tuple(tools)))

    before = size()
    if before <= config.trigger_tokens:
        return ClearingPlan(cleared)
    retrieval = config.retrieval_tool is not None and config.retrieval_tool in _tool_names(tools)
    scan = _candidates(ledger, config, skip | ledger.elsewhere, retrieval)
    picked, net = _choose(ledger, fixed, scan, config)
    chosen = scan.found[picked]
    if not chosen:
        return ClearingPlan(cleared)
    _clear(ledger, scan, picked)
    grown = ledger.previous = ledger.cleared
    report = tuple(ClearedToolResult(r.call.name, r.length, r.call.id, r.saved) for _, r in chosen)
    edit = ContextEdit(report, len(chosen) // config.batch, before, size(), len(grown), net)
    return ClearingPlan(grown, edit)


def _tool_names(tools: Sequence[Mapping[str, object]]) -> set[str]:
    names: set[str] = set()
    for tool in tools:
        function = tool.get("function")
        name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
        if isinstance(name, str):
            names.add(name)
    return names


@dataclass(slots=True)
class _Scan:
    """What :func:`_candidates` found last call, so the next call looks only at what is new.

    ``pending`` holds the open results that were not candidates (kept whole, unpaired, skipped):
    they are looked at again on every call. A candidate stays one until the ledger changes its
    pairings or its cleared set other than by :func:`_clear` (either drops the scan), or the skip
    set or retrieval flag changes.
    """

    config: ContextEditorSettings
    retrieval: bool
    skip: frozenset[str]
    found: list[tuple[int, Judged]]
    pending: list[int]
    seen: int  # how much of ``ledger.open`` was looked at
    # sums[i]: tokens the first i of ``found`` save (so a run of them is summed in one step)
    sums: list[int] = field(default_factory=lambda: [0])

    def resum(self, start: int) -> None:
        """Bring :attr:`sums` up to date after ``found`` changed from position ``start`` on."""
        saved = (judged.saved for _, judged in self.found[start:])
        self.sums[start:] = itertools.accumulate(saved, initial=self.sums[start])


def _candidates(
    ledger: RequestLedger, config: ContextEditorSettings, skip: frozenset[str], retrieval: bool
) -> _Scan:
    """The results that may be cleared now (its ``found``), oldest first: all but the newest
    ``keep``.

    A result that can never be cleared (not text, an excluded tool, too small to pay) leaves the
    ledger's open list for good, so later calls do not look at it again. One too small only
    while the placeholder names the retrieval tool is parked until the placeholder does not.
    """
    if ledger.parked and not retrieval:  # the shorter placeholder again: look at them anew
        ledger.open = sorted(ledger.open + ledger.parked)
        ledger.parked = []
        ledger.scan = None
    scan = ledger.scan
    if not (
        isinstance(scan, _Scan)
        and scan.config is config
        and scan.retrieval == retrieval
        and scan.skip == skip
    ):
        scan = _Scan(config, retrieval, skip, [], [], 0)
    results = ledger.results
    keep = config.keep  # the newest ``keep`` results, those from index ``kept`` on, stay
    kept = results[-keep] if 0 < keep <= len(results) else (0 if keep else len(ledger.view))
    examine = scan.pending + ledger.open[scan.seen :]
    found: list[tuple[int, Judged]] = []
    pending: list[int] = []
    gone: set[int] = set()
    for index in examine:
        call = None if index >= kept else ledger.call_of(index)
        if call is None or call.id in skip:
            pending.append(index)  # may become a candidate later
            continue
        judged = _judged(ledger, index, call, config, retrieval)
        if judged is not None:
            found.append((index, judged))
            continue
        gone.add(index)
        # the placeholder that names no tool is the shortest: too small even then is for good
        if retrieval and _judged(ledger, index, call, config, False) is not None:
            ledger.parked.append(index)  # never a candidate while ``retrieval`` holds
    for index in sorted(gone, reverse=True):  # ``open`` is sorted; these sit near its end
        del ledger.open[bisect.bisect_left(ledger.open, index)]
    if gone:
        ledger.parked.sort()
    start = len(scan.found)
    if found and scan.found and found[0][0] < scan.found[-1][0]:
        scan.found = sorted(scan.found + found, key=lambda item: item[0])
        start = 0
    else:
        scan.found.extend(found)
    scan.resum(start)
    scan.pending, scan.seen = pending, len(ledger.open)
    ledger.scan = scan
    return scan


def _clear(ledger: RequestLedger, scan: _Scan, picked: slice) -> None:
    """Clear the candidates ``picked``, keeping the scan that found them.

    Clearing changes no other candidate (a result is judged as recorded, not as sent) and only
    removes the cleared ones from ``open``, so the rest of the scan still holds: the next call
    need not look at every open result again.
    """
    ledger.add_cleared({r.call.id: r.clearing for _, r in scan.found[picked]})
    del scan.found[picked]
    scan.resum(picked.start)
    scan.seen = len(ledger.open)
    ledger.scan = scan


def _judged(
    ledger: RequestLedger,
    index: int,
    call: ToolCall,
    config: ContextEditorSettings,
    retrieval: bool,
) -> Judged | None:
    """What clearing result ``index`` (the answer to ``call``) saves, judged once for each
    placeholder (``retrieval``: it names the retrieval tool) and kept in the ledger."""
    key = (index, retrieval)
    if key not in ledger.judged:
        ledger.judged[key] = _judge(ledger.view[index], call, config, retrieval, ledger.counter)
    return ledger.judged[key]


def _judge(
    message: Message,
    call: ToolCall,
    config: ContextEditorSettings,
    retrieval: bool,
    counter: TokenCounter,
) -> Judged | None:
    """``None`` when clearing ``message`` is out (not text, an excluded tool) or saves fewer
    than ``min_saved_tokens`` (and at least one) with this placeholder."""
    if not message.is_text_only:
        return None
    tool = call.name or message.name or "tool"
    if {tool, message.name or tool} & config.exclude_tools:
        return None
    length = len(message.text)
    shortened = mark_of(message, SHORTENED)
    handle = shortened.get("handle") if shortened is not None else None
    where = handle if isinstance(handle, str) else call.id  # a shortened result's original
    placeholder = config.placeholder_for(tool, length, where, retrieval)
    saved = _saved(message, call, placeholder, config, counter)
    if saved < max(config.min_saved_tokens, 1):
        return None
    return Judged(call, length, saved, Clearing(placeholder, config.clear_tool_inputs))


def _saved(
    message: Message,
    call: ToolCall,
    placeholder: str,
    config: ContextEditorSettings,
    counter: TokenCounter,
) -> int:
    # as sent, the result differs only in its text, so the rest of its tokens cancel out
    saved = counter.count(message.text) - counter.count(placeholder)
    if config.clear_tool_inputs and call.args:
        saved += counter.count(json.dumps(call.args, ensure_ascii=False, default=str)) - 1
    return saved


def _choose(
    ledger: RequestLedger, fixed: int, scan: _Scan, config: ContextEditorSettings
) -> tuple[slice, float | None]:
    """The candidates to clear (of ``scan.found``). Plain: every whole batch, oldest first.
    Cache-aware: the newest ``k`` that pay the most.

    Clearing the newest ``k`` batches puts the edit point at the oldest of them, so a small ``k``
    is a cheap re-write near the end of the prompt and a large one saves more; the model picks the
    ``k`` with the largest expected net saving, or nothing when none is positive.
    """
    size, found, sums = config.batch, scan.found, scan.sums
    usable = len(found) - len(found) % size
    if config.mode == "plain" or not usable:
        return slice(0, usable), None
    model = CacheModel.of(ledger, fixed, config)
    best = usable  # the chosen run starts here: none chosen yet
    best_net = 0.0
    for at in range(usable - size, -1, -size):  # k = 1, 2, ...: the smallest ``k`` wins a tie
        net = model.net(edit_point=found[at][0], saved=sums[usable] - sums[at])
        if net > best_net:
            best, best_net = at, net
    return slice(best, usable), (best_net if best < usable else None)


__all__ = ["ClearingPlan", "apply_clearing", "plan_clearing", "plan_ledger"]
