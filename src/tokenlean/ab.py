"""The A/B report: does the tokenlean arm cost less per session than the control arm, and does
the agent stay as good? Read from the session logs of ``tokenlean proxy --ab SHARE`` and of the
LiteLLM callback's A/B test (:mod:`tokenlean.proxy.litellm`), alone or together.

Each line of a log is one finished part of a session (:mod:`tokenlean.proxy._arms`). Lines are
read from any number of logs (several proxies, restarts): a part read twice counts once (it is
named by its session, arm and part), and a session's parts are summed. A session found in both
arms (proxies that did not share a salt) is left out and counted.

Per arm: sessions, cost per session with its 95% interval, requests per session, the share of
tool results that report an error, ``read_original`` calls per session and latency per request;
then the difference of cost per session (tokenlean minus control) with Welch's 95% interval,
and one sentence. Costs are in dollars when every session's model has a catalogue price, else
in plain input tokens of each session's model. The sample size to tell a 10% difference is the
standard one for a difference of means, at 80% power and a 5% two-sided level
(:mod:`tokenlean._interval`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean, stdev
from typing import Any

from tokenlean._interval import Interval, mean_interval, needed_per_arm, welch_interval

__all__ = ["ARMS", "AbReport", "ArmSummary", "ab_report", "read_sessions", "report_lines"]

ARMS = ("control", "tokenlean")
#: The relative difference of cost per session the sample-size sentence is about.
DETECTABLE = 0.10
_SUMMED = ("requests", "upstream_errors", "usage_unknown", "input_tokens", "cache_read_tokens",
           "cache_write_tokens", "output_tokens", "cost", "tool_results", "tool_errors",
           "read_original_calls", "latency_seconds")  # fmt: skip


@dataclass(slots=True)
class Session:
    """One session of one arm: the sums of its parts."""

    key: str
    arm: str
    sums: dict[str, float] = field(default_factory=dict)
    cost_usd: float | None = 0.0

    def add(self, line: Mapping[str, Any]) -> None:
        for name in _SUMMED:
            self.sums[name] = self.sums.get(name, 0) + float(line.get(name) or 0)
        usd = line.get("cost_usd")
        self.cost_usd = None if usd is None or self.cost_usd is None else self.cost_usd + usd


@dataclass(frozen=True, slots=True)
class Read:
    """What the logs held."""

    sessions: list[Session]
    lines: int = 0
    repeated: int = 0  # lines of a part already read
    unreadable: int = 0
    in_both_arms: int = 0


def _parse(text: str) -> dict[str, Any] | None:
    try:
        line = json.loads(text)
    except ValueError:
        return None
    ok = isinstance(line, dict) and line.get("v") == 1 and line.get("arm") in ARMS
    return line if ok and all(isinstance(line.get(k), str) for k in ("session", "part")) else None


def _lines(paths: Iterable[str | Path]) -> Iterable[str]:
    for path in paths:
        with Path(path).open(encoding="utf-8") as f:
            yield from (text for text in f if text.strip())


def read_sessions(paths: Iterable[str | Path]) -> Read:
    """The sessions in these logs, parts read twice counted once and parts of one summed."""
    parts: dict[tuple[str, str, str], dict[str, Any]] = {}
    lines = unreadable = 0
    for text in _lines(paths):
        lines += 1
        line = _parse(text)
        if line is None:
            unreadable += 1
        else:
            parts[line["session"], line["arm"], line["part"]] = line
    sessions: dict[tuple[str, str], Session] = {}
    for (key, arm, _), line in sorted(parts.items()):
        sessions.setdefault((key, arm), Session(key, arm)).add(line)
    arms_of: dict[str, int] = {}
    for key, _ in sessions:
        arms_of[key] = arms_of.get(key, 0) + 1
    kept = [s for (key, _), s in sessions.items() if arms_of[key] == 1]
    both = sum(1 for n in arms_of.values() if n > 1)
    return Read(kept, lines, lines - unreadable - len(parts), unreadable, both)


@dataclass(frozen=True, slots=True)
class ArmSummary:
    """One arm's figures."""

    arm: str
    sessions: int
    costs: tuple[float, ...]  # per session, in the report's unit
    cost: Interval | None  # mean cost per session (None under two sessions)
    requests_per_session: float
    tool_error_rate: float | None  # of the tool results (None: there were none)
    read_original_per_session: float
    latency_per_request: float | None
    usage_unknown: int


@dataclass(frozen=True, slots=True)
class AbReport:
    """Both arms, the difference of cost per session (tokenlean minus control) and what it
    says."""

    read: Read
    unit: str  # "$" or "tokens"
    arms: Mapping[str, ArmSummary]
    difference: Interval | None
    needed: int | None  # sessions per arm to tell a DETECTABLE difference
    sentence: str


def _summary(arm: str, sessions: list[Session], dollars: bool) -> ArmSummary:
    costs = tuple((s.cost_usd or 0.0) if dollars else s.sums["cost"] for s in sessions)
    total = {name: sum(s.sums[name] for s in sessions) for name in _SUMMED} if sessions else {}
    n, requests = len(sessions), total.get("requests", 0)
    results = total.get("tool_results", 0)
    return ArmSummary(
        arm=arm,
        sessions=n,
        costs=costs,
        cost=mean_interval(costs) if n >= 2 else None,
        requests_per_session=requests / n if n else 0.0,
        tool_error_rate=total["tool_errors"] / results if results else None,
        read_original_per_session=total["read_original_calls"] / n if n else 0.0,
        latency_per_request=total["latency_seconds"] / requests if requests else None,
        usage_unknown=int(total.get("usage_unknown", 0)),
    )


def ab_report(paths: Iterable[str | Path]) -> AbReport:
    """The report of the sessions in the logs at ``paths``."""
    read = read_sessions(paths)
    dollars = bool(read.sessions) and all(s.cost_usd is not None for s in read.sessions)
    arms = {a: _summary(a, [s for s in read.sessions if s.arm == a], dollars) for a in ARMS}
    control, treated = arms["control"], arms["tokenlean"]
    if control.sessions < 2 or treated.sessions < 2:
        return AbReport(read, "$" if dollars else "tokens", arms, None, None, _too_few(arms))
    difference = welch_interval(control.costs, treated.costs)
    base = fmean(control.costs)
    delta = DETECTABLE * abs(base)
    needed = needed_per_arm(stdev(control.costs), stdev(treated.costs), delta) if delta else None
    sentence = _sentence(difference, base, needed, min(control.sessions, treated.sessions))
    return AbReport(read, "$" if dollars else "tokens", arms, difference, needed, sentence)


def _too_few(arms: Mapping[str, ArmSummary]) -> str:
    counts = ", ".join(f"{a.sessions} {a.arm}" for a in arms.values())
    return f"not enough sessions yet: an interval needs at least 2 sessions per arm ({counts})"


def _sentence(difference: Interval, base: float, needed: int | None, fewest: int) -> str:
    if not base:
        return "the control arm cost nothing: no relative difference to tell"
    rel = Interval(difference.estimate / base, difference.low / base, difference.high / base)
    interval = f"95% interval {rel.low:+.1%} to {rel.high:+.1%}"
    shown = f"{rel.estimate:+.1%} per session ({interval})"
    if not rel.contains(0.0):
        way = "less" if rel.estimate < 0 else "more"
        return (
            f"the tokenlean arm costs {abs(rel.estimate):.1%} {way} per session than control "
            f"({interval})"
        )
    more = 0 if needed is None else max(needed - fewest, 0)
    if more:
        return (
            f"not enough sessions yet: about {more} more per arm to tell a "
            f"{DETECTABLE:.0%} difference (so far {shown})"
        )
    return f"no difference of {DETECTABLE:.0%} or more in cost per session: {shown}"


def report_lines(report: AbReport) -> list[str]:
    """The report as a user reads it."""
    r, unit = report.read, report.unit
    head = (
        f"tokenlean ab report: {len(r.sessions)} sessions from {r.lines} lines "
        f"({r.repeated} read twice, {r.unreadable} unreadable, {r.in_both_arms} sessions in "
        f"both arms left out); cost in {'dollars' if unit == '$' else 'plain input tokens'}"
    )
    lines = [head, f"{'arm':<10} {'sessions':>8}  {'cost/session (95% interval)':<34} "
             f"{'requests/session':>16} {'tool errors':>11} {'read_original/session':>21} "
             f"{'latency/request':>15}"]  # fmt: skip
    lines += [_arm_line(a, unit) for a in report.arms.values()]
    if report.difference is not None:
        d = report.difference
        lines.append(
            f"difference (tokenlean - control): {_money(d.estimate, unit)} per session "
            f"(95% interval {_money(d.low, unit)} to {_money(d.high, unit)}, Welch)"
        )
    lines.append(report.sentence)
    return lines


def _arm_line(a: ArmSummary, unit: str) -> str:
    if a.cost is None:
        cost = _money(a.costs[0], unit) if a.costs else "-"
    else:
        c = a.cost
        cost = f"{_money(c.estimate, unit)} ({_money(c.low, unit)} to {_money(c.high, unit)})"
    errors = "-" if a.tool_error_rate is None else f"{a.tool_error_rate:.1%}"
    latency = "-" if a.latency_per_request is None else f"{a.latency_per_request:.3f} s"
    return (
        f"{a.arm:<10} {a.sessions:>8}  {cost:<34} {a.requests_per_session:>16.1f} "
        f"{errors:>11} {a.read_original_per_session:>21.2f} {latency:>15}"
    )


def _money(value: float, unit: str) -> str:
    if unit != "$":
        return f"{value:,.0f}"
    return f"-${-value:,.4f}" if value < 0 else f"${value:,.4f}"
