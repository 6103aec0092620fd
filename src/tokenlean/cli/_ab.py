"""``tokenlean ab report LOG...``: read the A/B session logs of ``tokenlean proxy --ab SHARE``
and say, per arm, what a session cost (with its 95% interval), how many requests it took, how
often a tool reported an error, and whether the difference between the arms is real yet.

Give it every proxy's log, across restarts: a session's parts are summed, a line read twice
counts once.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from tokenlean.cli._command import add_command

__all__ = ["add_subcommand"]


def add_subcommand(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds ``tokenlean ab report``."""
    p = add_command(sub, "ab", __doc__, "read the A/B session logs of tokenlean proxy --ab")
    commands = p.add_subparsers(dest="ab_command", required=True)
    report = commands.add_parser("report", help="per arm cost, quality, and their difference")
    report.add_argument("logs", nargs="+", metavar="LOG", help="session logs (JSON lines)")
    report.add_argument("--json", action="store_true", help="the figures as one JSON object")
    report.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    from tokenlean.ab import ab_report, report_lines

    try:
        report = ab_report(args.logs)
    except OSError as exc:
        print(f"tokenlean ab report: {exc}", file=sys.stderr)
        return 2
    if args.json:
        data = asdict(report)
        data["read"].pop("sessions")
        print(json.dumps(data, indent=2))
    else:
        print("\n".join(report_lines(report)))
    return 0
