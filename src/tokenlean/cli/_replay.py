"""``tokenlean replay [PATHS...]``: replay traces through each strategy and print what it saves.

Traces are files or folders of ``.json`` trajectories (the bundled samples when none are given),
or coding agents' own sessions: Claude Code transcripts (``~/.claude/projects/<project>``), Codex
rollouts (``~/.codex/sessions``), gemini-cli sessions (``~/.gemini/tmp``) and OpenCode exports
(``opencode export <session> > session.json``), found in folders by their content. Sessions get a
table per session; a session the agent compacted is replayed one context window at a time, its
windows summed in its row.

By default each kind of agent's sessions are replayed with no middleware, the recommended stack
for the provider of their models and that provider's own clearing, each session priced by its
own model (``--model`` prices all as one): a table per session and in total, in dollars where
the model's prices are known, one sentence saying what tokenlean would have saved, and where the
money went. ``-s`` names the strategies instead, ``--all`` replays every default one; these,
and ``--markdown``, print the full grid of figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenlean._counts import count
from tokenlean.cli import add_output_price
from tokenlean.cli._command import add_command
from tokenlean.cli._priced import chosen_pricing, priced_lines
from tokenlean.cli._traces import load_traces
from tokenlean.replay import Trajectory, TrajectoryFormatError, session_name

if TYPE_CHECKING:  # the runner imports LangChain: the command must load without the extra
    from tokenlean.replay import ReplayReport

__all__ = ["add_subcommand"]

ESTIMATED = (
    "token counts are estimates: for exact ones, set TOKENLEAN_TIKTOKEN_DIR to a folder holding "
    "o200k_base.tiktoken, or fill tiktoken's cache once on a machine with internet access "
    "(python -c 'import tiktoken; tiktoken.get_encoding(\"o200k_base\")')"
)


def add_subcommand(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    summary = "replay agent traces through each strategy and report what it saves"
    p = add_command(sub, "replay", __doc__, summary)
    p.add_argument("paths", nargs="*", type=Path, help="trace files or folders (default: bundled)")
    p.add_argument(
        "-s",
        "--strategy",
        action="append",
        dest="strategies",
        metavar="NAME",
        help="strategy to replay (repeatable; default: none, the recommended stack for the "
        "sessions' provider and its own clearing), printed as the full grid",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="replay every default strategy (every registered one that is available)",
    )
    p.add_argument("--list", action="store_true", help="list the strategies and exit")
    p.add_argument(
        "-j", "--jobs", type=_positive, default=None, help="parallel processes (default: cores)"
    )
    p.add_argument("--json", type=Path, metavar="FILE", help="write full results as JSON")
    p.add_argument("--chart", type=Path, metavar="FILE", help="write a chart (.svg, .png or .html)")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument(
        "--by-source", action="store_true", help="also print a table per source (trace folder)"
    )
    add_output_price(p, "in the whole-bill columns")
    p.add_argument(
        "--model",
        "--pricing",
        dest="model",
        metavar="NAME",
        help="price every session as this model (default: each as its own; its prices from "
        "the genai-prices catalogue, the prices extra) or preset (anthropic, "
        "anthropic-read-0.05, anthropic-1h, openai, openai-paid-writes, none); an unknown "
        "model takes its provider's preset",
    )
    p.add_argument(
        "--cache-ttl",
        choices=("5m", "1h"),
        default="5m",
        help="with --model: the cache kind its writes are priced at (default: 5m)",
    )
    p.add_argument(
        "--by-session",
        action="store_true",
        help="also print a table per session (trace file, its context windows summed); the "
        "default for agents' own sessions",
    )
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE to register more strategies (repeatable)",
    )
    p.set_defaults(func=_run_replay)


def _positive(text: str) -> int:
    """An int of at least 1 (``-j 0`` and ``-j -3`` are refused, not guessed at)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


#: What ``--chart`` writes, by the file's extension.
CHARTS = (".svg", ".png", ".html")


def _output_problem(args: argparse.Namespace) -> str | None:
    """Why an output file cannot be written, said before the replay runs (not after it)."""
    for option, path in (("--json", args.json), ("--chart", args.chart)):
        if path is None:
            continue
        folder = path.parent
        if not folder.is_dir():
            return f"{option} {path}: no folder {folder}"
        if path.is_dir() or not os.access(folder, os.W_OK):
            return f"{option} {path}: cannot write there"
    if args.chart is not None and args.chart.suffix.lower() not in CHARTS:
        return f"--chart {args.chart}: the chart is written as {', '.join(CHARTS)}"
    if args.chart is not None and args.chart.suffix.lower() == ".png":
        from tokenlean.replay import png_problem

        problem = png_problem()
        return f"--chart {args.chart}: {problem}" if problem else None
    return None


def _plugins_problem(modules: Sequence[str]) -> str | None:
    """Why a ``--plugin`` module cannot be loaded, in one line."""
    from tokenlean import replay

    replay.load_plugins()  # the built-in ones: a missing extra is the command's error (main)
    for module in modules:
        try:
            replay.load_plugins([module])
        except Exception as exc:  # a plugin's own failure is the user's to see, in one line
            return f"--plugin {module}: {type(exc).__name__}: {exc}"
    return None


def _run_replay(args: argparse.Namespace) -> int:
    # every replay drives a real LangChain agent loop: without the extra, main names it first
    import langchain.agents  # noqa: F401

    from tokenlean import replay

    problem = _plugins_problem(args.plugin) or _output_problem(args) or _price_problem(args)
    if problem:
        print(f"tokenlean: {problem}", file=sys.stderr)
        return 2
    if args.list:
        for s in replay.all_strategies():
            state = "" if s.available() else "  (unavailable: missing dependency)"
            print(f"{s.name:<28} {s.description}{state}")
        return 0
    try:
        trajectories = load_traces(args.paths)
        for name in args.strategies or ():
            replay.get_strategy(name)
    except TrajectoryFormatError as exc:
        print(f"tokenlean: {exc}", file=sys.stderr)
        return 2
    except KeyError as exc:
        print(f"tokenlean: {exc.args[0]}", file=sys.stderr)
        return 2
    if not trajectories:
        print("tokenlean: no traces found", file=sys.stderr)
        return 2
    if args.strategies:
        return _run_grid(trajectories, args)
    return _run_default(trajectories, args)


def _price_problem(args: argparse.Namespace) -> str | None:
    if args.output_price is not None and not args.output_price >= 0:
        return "--output-price must be a number >= 0"
    return None


def _run_default(trajectories: list[Trajectory], args: argparse.Namespace) -> int:
    """Per kind of agent, its own strategies, priced by session (see the module's doc)."""
    from tokenlean.cli._replay_report import (
        plan,
        print_agent,
        replay_agents,
        write_outputs,
    )

    runs = plan(trajectories, args)
    start = time.perf_counter()
    replay_agents(runs, args)
    elapsed = time.perf_counter() - start
    kinds = ", ".join(f"{count(len(r.trajectories), 'trace')} of {r.agent}" for r in runs)
    print(f"{kinds} in {elapsed:.1f}s\n")
    for run in runs:
        print_agent(run, args, heading=len(runs) > 1)
    reports = [r.report for r in runs if r.report is not None]
    _notes(reports)
    failed = write_outputs(runs, args)
    return 1 if failed or any(r.errors() for r in reports) else 0


def _notes(reports: Sequence[Any]) -> None:
    from tokenlean import replay

    for report in reports:
        for line in replay.summary_lines(report)[2:]:  # failures: the counter is said once
            print(line)
    if reports:
        print(replay.summary_lines(reports[0])[0])
        if reports[0].counter.startswith("estimate"):
            print(f"tokenlean: {ESTIMATED}", file=sys.stderr)


def _run_grid(trajectories: list[Trajectory], args: argparse.Namespace) -> int:
    """The named strategies on every trace, as the full grid."""
    from tokenlean import replay

    names = args.strategies
    if replay.BASELINE not in names:
        names = [replay.BASELINE, *names]
    native = all("native_format" in t.meta for t in trajectories)
    by_session = args.by_session or (native and not args.by_source)
    if by_session:
        trajectories = [replace(t, source_name=session_name(t)) for t in trajectories]
    progress = replay.EtaProgress(len(trajectories) * len(names))
    start = time.perf_counter()
    result = replay.run_replay(
        trajectories, names, jobs=args.jobs, plugins=args.plugin,
        progress=lambda _d, _t, run: progress.step(1, run.strategy),
    )  # fmt: skip
    progress.finish(f"replayed {count(len(trajectories) * len(names), 'run')}")
    elapsed = time.perf_counter() - start
    result.output_price = args.output_price
    traces, strategies = count(len(trajectories), "trajectory"), count(len(names), "strategy")
    print(f"{traces} x {strategies} in {elapsed:.1f}s\n")
    _print_grid(result, args, by_session=by_session)
    return 1 if result.errors() or _write_files(result, args) else 0


def _print_grid(result: ReplayReport, args: argparse.Namespace, *, by_session: bool) -> None:
    from tokenlean import replay

    print(replay.markdown_table(result) if args.markdown else replay.text_table(result))
    print()
    if args.by_source:
        print(replay.by_source_section(result, markdown=args.markdown) + "\n")
    elif by_session:
        print(replay.source_table(result, markdown=args.markdown, label="session") + "\n")
    for line in replay.summary_lines(result):
        print(line)
    if args.model:
        print()
        for line in priced_lines(result, chosen_pricing(args.model, args.cache_ttl)):
            print(line)
    if result.counter.startswith("estimate"):
        print(f"tokenlean: {ESTIMATED}", file=sys.stderr)


def _write_files(result: ReplayReport, args: argparse.Namespace) -> int:
    """Write the JSON, then the chart; one that fails is a one-line error, not a traceback."""
    from tokenlean import replay

    failed = 0
    for option, path, write in (
        ("results", args.json, replay.write_json),
        ("chart", args.chart, replay.write_chart),
    ):
        if path is None:
            continue
        try:
            write(result, path)
        except (OSError, ImportError) as exc:
            print(f"tokenlean: could not write the {option} to {path}: {exc}", file=sys.stderr)
            failed += 1
            continue
        print(f"{option} written to {path}")
    return failed
