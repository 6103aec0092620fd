"""The replay's default report on one agent's sessions (an :class:`~tokenlean.replay._bill.
AgentBill`), in at most 100 columns: a table per session and in total, one sentence that says
what tokenlean would have saved, and where the money went without middleware."""

from __future__ import annotations

import textwrap
from collections import Counter

from tokenlean.replay._bill import TRAJECTORIES, AgentBill, Row
from tokenlean.replay._parts import FIXED, OUTPUT
from tokenlean.replay._strategies import BASELINE

__all__ = ["WIDTH", "agent_report", "money_lines", "verdict"]

#: The widest line the default report prints.
WIDTH = 100
#: Tools named in "where the money went" (the dearest); the others are summed.
TOP_TOOLS = 5
#: The provider's own clearing, as the verdict names it.
PROVIDER_CLEARING = {"anthropic-clear-tool-uses": "Anthropic's server-side clearing"}
_HEAD = ("session / strategy", "billed input", "whole bill", "read:write", "recall", "breaks")
_WIDTHS = (30, 17, 17, 10, 6, 6)


def agent_report(bill: AgentBill) -> list[str]:
    """The whole report on ``bill``: heading, prices, tables, verdict, where the money went."""
    lines = [_heading(bill), *_prices(bill), "", *_table(bill), ""]
    lines += _wrap(verdict(bill))
    return [*lines, "", *money_lines(bill)]


def _heading(bill: AgentBill) -> str:
    calls = sum(bill.rows[s.name][BASELINE].calls for s in bill.sessions)
    return f"{bill.agent}: {_sessions(bill, len(bill.sessions))}, {_count(calls, 'call')}"


def _sessions(bill: AgentBill, n: int) -> str:
    """``n`` sessions of ``bill``'s agent; trajectory files are runs, not an agent's sessions."""
    if bill.agent == TRAJECTORIES:
        return f"{n:,} {'trajectory' if n == 1 else 'trajectories'}"
    return _count(n, "session")


def _prices(bill: AgentBill) -> list[str]:
    """What each session was priced at, by model; and what is left out of the dollars."""
    by_model = Counter(s.model or "(no model recorded)" for s in bill.sessions)
    pricing = {s.model or "(no model recorded)": s.pricing for s in bill.sessions}
    shown = []
    for model, n in by_model.most_common():
        p = pricing[model]
        price = f"${p.usd_per_mtok:g}/M input" if p.usd_per_mtok else f"{p.name} preset, ratios"
        shown.append(f"{model} x{n} ({price})")
    lines = _wrap("priced by each session's model: " + ", ".join(shown))
    left = [s.name for s in bill.sessions if s.name not in bill.covered]
    if left:
        lines += _wrap(
            f"{_count(len(left), 'session')} with no known price left out of the totals "
            f"(ratios only in its rows): {', '.join(left)}"
        )
    elif not bill.in_dollars:
        lines.append("no session's model has a known price: ratios to no middleware only")
    return lines


def _table(bill: AgentBill) -> list[str]:
    lines = [_line(_HEAD), _line(tuple("-" * w for w in _WIDTHS))]
    for session in bill.sessions:
        rows = bill.rows[session.name]
        said = f" ({session.model or 'no model'}, {_count(rows[BASELINE].calls, 'call')})"
        room = WIDTH - len(said)  # a long name is cut, so the model stays in sight
        name = session.name if len(session.name) <= room else session.name[: room - 1] + "~"
        lines.append(_cut(name + said))
        lines += _rows(rows, dollars=session.in_dollars)
    total = _count(bill.total[BASELINE].calls, "call")
    lines.append(f"all {_sessions(bill, len(bill.covered))} ({total})")
    return lines + _rows(bill.total, dollars=bill.in_dollars)


def _rows(rows: dict[str, Row], *, dollars: bool) -> list[str]:
    base = rows[BASELINE]
    out = []
    for name, row in rows.items():
        if row.failed and not row.calls:
            out.append(_cut(f"  {name:<28}  failed: see the errors below"))
            continue
        billed = _cell(row.billed, base.billed, dollars)
        whole = _cell(row.whole, base.whole, dollars)
        ratio = f"{row.read / row.written:.1f}:1" if row.written else "-"
        cells = (f"  {name}", billed, whole, ratio, f"{row.recall:.3f}", str(row.breaks))
        out.append(_line(cells))
    return out


def _cell(value: float, base: float, dollars: bool) -> str:
    ratio = f"{value / base:.3f}" if base else "-"
    return f"{_usd(value)} ({ratio})" if dollars else ratio


def _usd(value: float) -> str:
    # cents, except under a dollar, where cents would round a small saving away
    return f"${value:,.2f}" if abs(value) >= 1 or value == 0 else f"${value:.3g}"


def _line(cells: tuple[str, ...]) -> str:
    parts = [
        c.ljust(w) if i == 0 else c.rjust(w)
        for i, (c, w) in enumerate(zip(cells, _WIDTHS, strict=True))
    ]
    return _cut("  ".join(parts).rstrip())


def _cut(text: str) -> str:
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "~"


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, break_on_hyphens=False, subsequent_indent="  ")


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def verdict(bill: AgentBill) -> str:
    """One sentence: what the recommended stack (else the first strategy past ``none``) would
    have saved of the whole bill on the sessions of the total, keeping which share of the
    references the agent later used; and what the provider's own clearing saves."""
    mine = [n for n in bill.strategies if n != BASELINE and n not in PROVIDER_CLEARING]
    chosen = next((n for n in mine if n.startswith("recommended")), mine[0] if mine else None)
    base = bill.total[BASELINE]
    n = len(bill.covered)
    sessions = (
        f"these {_sessions(bill, n)}"
        if bill.agent == TRAJECTORIES
        else f"these {_count(n, bill.agent + ' session')}"
    )
    if chosen is None or not base.whole:
        return f"On {sessions} no middleware was compared with none."
    row = bill.total[chosen]
    share = 1 - row.whole / base.whole
    if bill.in_dollars:
        saved = base.whole - row.whole
        what = f"saved {_usd(saved)} of {_usd(base.whole)} ({share:.1%})"
        if saved < 0:
            what = f"cost {_usd(-saved)} more than {_usd(base.whole)} ({-share:.1%})"
    else:
        what = f"saved {share:.1%} of the whole bill" if share >= 0 else f"cost {-share:.1%} more"
    text = (
        f"On {sessions} tokenlean ({chosen}) would have {what}, keeping {row.recall:.1%} "
        "of what the agent later used"
    )
    return text + "".join(_clearing(bill, base)) + "."


def _clearing(bill: AgentBill, base: Row) -> list[str]:
    out = []
    for name, label in PROVIDER_CLEARING.items():
        if name in bill.total and bill.total[name].whole:
            share = 1 - bill.total[name].whole / base.whole
            how = f"saves {share:.1%}" if share >= 0 else f"costs {-share:.1%} more"
            out.append(f"; {label} {how}")
    return out


def money_lines(bill: AgentBill) -> list[str]:
    """Where the money went without middleware: each part's bill and share of the whole."""
    parts = bill.parts
    total = sum(parts.values())
    if not total:
        return []
    fixed = [p for p in (*FIXED, OUTPUT) if p in parts]
    tools = sorted((p for p in parts if p not in fixed), key=lambda p: -parts[p])
    shown = [(p, parts[p]) for p in (*fixed, *tools[:TOP_TOOLS])]
    if rest := tools[TOP_TOOLS:]:
        shown.append((f"results of {_count(len(rest), 'other tool')}", sum(parts[p] for p in rest)))
    shown.sort(key=lambda item: -item[1])
    money = _usd if bill.in_dollars else (lambda v: f"{v / total:.3f}")
    whole = f" ({_usd(total)} in all)" if bill.in_dollars else ""
    lines = [f"Where the money went without middleware{whole}:"]
    lines += [f"  {part:<44}{money(v):>12}{v / total:>9.1%}" for part, v in shown]
    return lines
