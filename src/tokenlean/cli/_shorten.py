"""``tokenlean shorten [FILE] [--query Q] [--max-tokens N]``: shorten a log in a shell pipeline.

Reads FILE (standard input when it is omitted or ``-``), writes the shortened text to standard
output, and with ``--stats`` a one-line summary to standard error. Omission markers give input
line numbers, so ``sed -n '120,160p' FILE`` gets any omitted stretch back.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import get_args

from tokenlean.cli._command import add_command
from tokenlean.shorten import DEFAULT_OPTIONS, KindChoice, shorten

__all__ = ["add_subcommand", "run"]


def add_subcommand(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    summary = "shorten a tool output or log, keeping errors, summaries and query matches"
    p = add_command(sub, "shorten", __doc__, summary)
    p.add_argument("file", nargs="?", default="-", help="input file (default: standard input)")
    p.add_argument("-q", "--query", default=None, help="what you are looking for (e.g. a command)")
    p.add_argument(
        "-n",
        "--max-tokens",
        type=int,
        default=DEFAULT_OPTIONS.max_tokens,
        help=f"token budget for ordinary lines (default: {DEFAULT_OPTIONS.max_tokens})",
    )
    p.add_argument(
        "--kind", choices=get_args(KindChoice), default="auto", help="content kind (default: auto)"
    )
    p.add_argument("--stats", action="store_true", help="print a summary to standard error")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.max_tokens < 1:
        print("tokenlean shorten: --max-tokens must be at least 1", file=sys.stderr)
        return 2
    try:
        data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        print(f"tokenlean shorten: {exc}", file=sys.stderr)
        return 2
    text = data.decode("utf-8", errors="replace")
    report = shorten(text, max_tokens=args.max_tokens, query=args.query, kind=args.kind)
    sys.stdout.write(report.text)
    sys.stdout.flush()
    if args.stats:
        print(
            f"tokenlean shorten: {report.kind}, ~{report.tokens_before} -> ~{report.tokens_after} "
            f"tokens, {report.lines_omitted} lines omitted in {len(report.omissions)} places",
            file=sys.stderr,
        )
    return 0
