"""``tokenlean ab report LOG...``: read the A/B session logs of ``tokenlean proxy --ab SHARE``
and say, per arm, what a session cost (with its 95% interval), how many requests it took, how
often a tool reported an error, and whether the difference between the arms is real yet.

Give it every proxy's log, across restarts: a session's parts are summed, a line read twice
counts once.

The proxy's side (``--ab SHARE``, ``--ab-log``, ``--ab-idle``, ``--salt``) is here too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tokenlean.cli._command import add_command
from tokenlean.cli._originals import parse_age

__all__ = ["SALT_ENV", "ab_settings", "add_ab_options", "add_subcommand", "default_ab_log"]

SALT_ENV = "TOKENLEAN_PROXY_SALT"


def default_ab_log() -> Path:
    """``$XDG_CACHE_HOME/tokenlean/ab-sessions.jsonl``, else under ``~/.cache``."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if Path(base).is_absolute() else Path.home() / ".cache"
    return (root / "tokenlean" / "ab-sessions.jsonl").absolute()


def add_ab_options(p: argparse.ArgumentParser) -> None:
    """The proxy's A/B options."""
    p.add_argument(
        "--ab",
        type=float,
        metavar="SHARE",
        help="A/B test: SHARE of sessions (0 to 1) are forwarded as sent (control), the rest "
        "rewritten; per-arm usage in /metrics and a line per finished session in --ab-log",
    )
    p.add_argument(
        "--ab-log",
        type=Path,
        metavar="FILE",
        help=f"where finished A/B sessions are appended (default {default_ab_log()})",
    )
    p.add_argument(
        "--ab-idle",
        type=parse_age,
        default=1800.0,
        metavar="AGE",
        help="an A/B session idle this long is finished and logged (default 30m)",
    )
    p.add_argument(
        "--salt",
        default=os.environ.get(SALT_ENV) or None,
        help=f"secret that keys session labels and A/B arms (default ${SALT_ENV}, else random "
        "per start): give every proxy of a fleet the same one",
    )


def ab_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The ``ProxySettings`` fields these options set (none for a command without them)."""
    given: dict[str, Any] = {}
    if getattr(args, "salt", None):
        given["session_salt"] = args.salt
    share = getattr(args, "ab", None)
    if share is None:
        return given
    log = args.ab_log or default_ab_log()
    log.parent.mkdir(parents=True, exist_ok=True)
    return {**given, "ab_share": share, "ab_log": log, "ab_idle": args.ab_idle}


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
