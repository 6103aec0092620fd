"""The ``tokenlean`` command.

``tokenlean replay [PATHS...]`` replays trajectories (files or folders of ``.json`` traces; the
bundled samples when none are given) through every available strategy and prints what each saves.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

SubcommandSetup = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

#: Modules that add subcommands: each defines ``add_subcommand(subparsers)``.
SUBCOMMAND_MODULES: list[str] = ["tokenlean.shorten_cli", "tokenlean.proxy_cli"]


def _replay_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay",
        help="replay agent traces through each strategy and report what it saves",
        description=__doc__,
    )
    p.add_argument("paths", nargs="*", type=Path, help="trace files or folders (default: bundled)")
    p.add_argument(
        "-s",
        "--strategy",
        action="append",
        dest="strategies",
        metavar="NAME",
        help="strategy to replay (repeatable; default: all available)",
    )
    p.add_argument("--list", action="store_true", help="list the strategies and exit")
    p.add_argument(
        "-j", "--jobs", type=int, default=None, help="parallel processes (default: cores)"
    )
    p.add_argument("--json", type=Path, metavar="FILE", help="write full results as JSON")
    p.add_argument("--chart", type=Path, metavar="FILE", help="write a chart (.svg or .html)")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE to register more strategies (repeatable)",
    )
    p.set_defaults(func=_run_replay)


def _collect(paths: Sequence[Path]) -> list[Path]:
    from tokenlean.replay.bundled import bundled_paths

    if not paths:
        return bundled_paths()
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.json") if p.name != "index.json"))
        else:
            files.append(path)
    return files


def _run_replay(args: argparse.Namespace) -> int:
    from tokenlean.replay import report, strategies
    from tokenlean.replay.formats import TrajectoryFormatError, load_trajectory
    from tokenlean.replay.runner import run_replay, stderr_progress

    strategies.load_plugins(args.plugin)
    if args.list:
        for s in strategies.all_strategies():
            state = "" if s.available() else "  (unavailable: missing dependency)"
            print(f"{s.name:<28} {s.description}{state}")
        return 0
    try:
        trajectories = [load_trajectory(p) for p in _collect(args.paths)]
    except TrajectoryFormatError as exc:
        print(f"tokenlean: {exc}", file=sys.stderr)
        return 2
    if not trajectories:
        print("tokenlean: no traces found", file=sys.stderr)
        return 2
    names = args.strategies or strategies.default_names()
    if strategies.BASELINE not in names:
        names = [strategies.BASELINE, *names]
    try:
        for name in names:
            strategies.get(name)
    except KeyError as exc:
        print(f"tokenlean: {exc.args[0]}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    result = run_replay(
        trajectories, names, jobs=args.jobs, plugins=args.plugin, progress=stderr_progress
    )
    elapsed = time.perf_counter() - start
    print(f"{len(trajectories)} trajectories x {len(names)} strategies in {elapsed:.1f}s\n")
    print(report.markdown_table(result) if args.markdown else report.text_table(result))
    print()
    for line in report.summary_lines(result):
        print(line)
    if args.json:
        report.write_json(result, args.json)
        print(f"results written to {args.json}")
    if args.chart:
        report.write_chart(result, args.chart)
        print(f"chart written to {args.chart}")
    return 1 if result.errors() else 0


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(prog="tokenlean", description="Cheaper long-running agents.")
    sub = parser.add_subparsers(dest="command", required=True)
    _replay_parser(sub)
    for module in SUBCOMMAND_MODULES:
        importlib.import_module(module).add_subcommand(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
