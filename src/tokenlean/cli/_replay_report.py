"""``tokenlean replay`` with no strategy named: per kind of agent, no middleware, the recommended
stack for its provider and the provider's own clearing, each session priced by its own model,
reported in dollars with one sentence to act on and where the money went."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tokenlean._counts import count
from tokenlean.replay import (
    WIDTH,
    AgentBill,
    EtaProgress,
    ReplayReport,
    Session,
    Trajectory,
    agent_bill,
    agent_report,
    by_source_section,
    default_names,
    default_strategies,
    markdown_table,
    parts_by_trajectory,
    run_replay,
    session_name,
    session_of,
    source_table,
    to_json,
    verdict,
    write_chart,
)

__all__ = ["AgentRun", "plan", "print_agent", "replay_agents", "write_outputs"]


@dataclass
class AgentRun:
    """One kind of agent's trajectories, the strategies replayed on them, and the results."""

    agent: str
    trajectories: list[Trajectory]
    sessions: dict[str, Session]  # trajectory id -> its session
    strategies: list[str]
    notes: list[str] = field(default_factory=list)  # how the strategies were picked
    report: ReplayReport | None = None
    bill: AgentBill | None = None


def plan(trajectories: Sequence[Trajectory], args: argparse.Namespace) -> list[AgentRun]:
    """The trajectories grouped by agent (in the order first seen), each with its strategies
    (every default one with ``--all``) and notes on how they were picked."""
    runs: dict[str, AgentRun] = {}
    for t in trajectories:
        session = session_of(t, args.model, args.cache_ttl)
        run = runs.setdefault(session.agent, AgentRun(session.agent, [], {}, []))
        run.trajectories.append(t)
        run.sessions[t.id] = session
    for run in runs.values():
        if args.all:
            run.strategies = default_names()
            continue
        run.strategies, run.notes = default_strategies(run.agent, list(run.sessions.values()))
    return list(runs.values())


def replay_agents(runs: Sequence[AgentRun], args: argparse.Namespace) -> None:
    """Replay every agent's trajectories, and measure where the money went without middleware
    (not for ``--markdown``, which prints the full grid instead), with one progress line."""
    size = {t.id: _size(t) for r in runs for t in r.trajectories}
    parts = 0 if args.markdown else 1
    total = sum(size[t.id] * (len(r.strategies) + parts) for r in runs for t in r.trajectories)
    progress = EtaProgress(total)

    def step(_done: int, _total: int, metrics: Any) -> None:
        progress.step(size[metrics.trajectory], metrics.strategy)

    def parted(trajectory: Trajectory) -> None:
        progress.step(size[trajectory.id], "where the money went")

    for run in runs:
        traces = [_by_session(t, args) for t in run.trajectories]
        run.report = run_replay(
            traces, run.strategies, jobs=args.jobs, plugins=args.plugin, progress=step
        )
        found = parts_by_trajectory(traces, jobs=args.jobs or 2, done=parted) if parts else {}
        run.bill = agent_bill(run.agent, run.strategies, run.sessions, run.report.runs, found)
    runs_done = sum(len(r.trajectories) * len(r.strategies) for r in runs)
    progress.finish(f"replayed {count(runs_done, 'run')}")


def _size(trajectory: Trajectory) -> float:
    """The work a trajectory's replay takes, roughly: its text's length."""
    return float(1 + sum(len(m.text) for m in trajectory.messages))


def _by_session(trajectory: Trajectory, args: argparse.Namespace) -> Trajectory:
    """A session's windows pooled as one source, unless ``--by-source`` groups by folder."""
    if args.by_source or "native_format" not in trajectory.meta:
        return trajectory
    return replace(trajectory, source_name=session_name(trajectory))


def print_agent(run: AgentRun, args: argparse.Namespace, *, heading: bool) -> None:
    """One agent's report: the default one, or with ``--markdown`` the full grid."""
    if run.report is None or run.bill is None:
        return
    if args.markdown:
        print(f"## {run.agent}\n\n" if heading else "", end="")
        print(markdown_table(run.report) + "\n")
        print(source_table(run.report, markdown=True, label="session") + "\n")
        print(verdict(run.bill) + "\n")
    else:
        lines = agent_report(run.bill)
        print("\n".join([*lines[:1], *(_wrap(n) for n in run.notes), *lines[1:]]) + "\n")
    if args.by_source:
        print(by_source_section(run.report, markdown=args.markdown) + "\n")


def write_outputs(runs: Sequence[AgentRun], args: argparse.Namespace) -> int:
    """The JSON (every run, and each agent's priced report) and the chart (one per agent when
    agents are mixed); a file that cannot be written is a one-line error, the rest still is."""
    done = [(r.agent, r.report, r.bill) for r in runs if r.report and r.bill]
    failed = 0
    if args.json and done:
        names = list(dict.fromkeys(n for _, report, _ in done for n in report.strategies))
        every = [m for _, report, _ in done for m in report.runs]
        data = {**to_json(ReplayReport(names, every, done[0][1].counter))}
        data["agents"] = [bill.to_dict() for _, _, bill in done]
        text = json.dumps(data, indent=2) + "\n"
        failed += _write(args.json, "results", lambda p: p.write_text(text, encoding="utf-8"))
    for agent, report, _ in done if args.chart else []:
        path = args.chart if len(done) == 1 else _suffixed(args.chart, agent)
        failed += _write(path, "chart", lambda p, r=report: write_chart(r, p))
    return failed


def _suffixed(path: Path, agent: str) -> Path:
    return path.with_name(f"{path.stem}-{agent.lower().replace(' ', '-')}{path.suffix}")


def _write(path: Path, what: str, write: Any) -> int:
    try:
        write(path)
    except (OSError, ImportError) as exc:
        print(f"tokenlean: could not write the {what} to {path}: {exc}", file=sys.stderr)
        return 1
    print(f"{what} written to {path}")
    return 0


def _wrap(note: str) -> str:
    return "\n".join(textwrap.wrap(note, WIDTH, subsequent_indent="  "))
