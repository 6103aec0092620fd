"""``tokenlean proxy``: serve the tokenlean proxy for any agent that speaks the provider APIs.

Point the agent at it (``ANTHROPIC_BASE_URL=http://HOST:PORT`` for Anthropic clients,
``OPENAI_BASE_URL=http://HOST:PORT/v1`` for OpenAI ones, the base URL ``http://HOST:PORT`` for
Gemini ones). It rewrites the bodies of ``/v1/messages``, ``/v1/chat/completions``,
``/v1/responses`` and Gemini's ``generateContent`` / ``streamGenerateContent`` (first-sight
shortening of tool results, long inputs of calls that have run cut; the same bytes for the same
history on every request, so the prompt cache keeps hitting), passes everything else through,
logs what each request saved, serves ``GET /tokenlean/stats``, and prints a summary when it
stops (Ctrl-C).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.applications import Starlette

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787


def add_proxy_options(p: argparse.ArgumentParser) -> None:
    """Options shared by ``tokenlean proxy`` and ``tokenlean wrap``."""
    p.add_argument(
        "--upstream",
        metavar="URL",
        default=None,
        help="send every request to URL + path (default: api.anthropic.com for Anthropic "
        "paths, generativelanguage.googleapis.com for Gemini paths, api.openai.com for the rest)",
    )
    p.add_argument(
        "--originals",
        type=Path,
        metavar="DIR",
        default=None,
        help="where originals of shortened results are kept "
        "(default: ~/.cache/tokenlean/originals)",
    )
    p.add_argument(
        "--no-rewrite", action="store_true", help="forward bodies unchanged (measure, compare)"
    )
    p.add_argument(
        "--retrieval",
        choices=["file", "mcp"],
        help="markers name the file, or read_original for `tokenlean mcp` (default: file)",
    )


def add_subcommand(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds ``tokenlean proxy``."""
    p = sub.add_parser(
        "proxy",
        help="serve a local proxy that applies tokenlean to any agent (Claude Code, Codex, SDKs)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on ({DEFAULT_HOST})")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port ({DEFAULT_PORT})")
    add_proxy_options(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no log line per request")
    p.set_defaults(func=run)


def build_app(args: argparse.Namespace, command: str) -> Starlette | None:
    """The proxy app for these options, or None after telling the user what is wrong."""
    try:
        from tokenlean import proxy
    except ImportError as exc:
        from tokenlean.cli import missing_extra

        hint = missing_extra(command, exc) if isinstance(exc, ModuleNotFoundError) else None
        print(hint or f"tokenlean {command}: {exc}", file=sys.stderr)
        return None
    try:
        settings = proxy.ProxySettings(
            upstream=args.upstream,
            originals_dir=args.originals or proxy.default_originals_dir(),
        )
    except ValueError as exc:
        print(f"tokenlean {command}: {exc}", file=sys.stderr)
        return None
    rewriter = proxy.default_rewriter(settings.originals_dir, retrieval=args.retrieval)
    return proxy.create_app(settings, rewriter=None if args.no_rewrite else rewriter)


def print_summary(app: Starlette) -> None:
    from tokenlean.proxy import summary_lines

    for line in summary_lines(app.state.stats.snapshot()):
        print(line, file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        print("tokenlean proxy: --port must be between 0 and 65535", file=sys.stderr)
        return 2
    app = build_app(args, "proxy")
    if app is None:
        return 2
    from tokenlean.proxy import serve

    if not args.quiet:
        logging.basicConfig(format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
        logging.getLogger("tokenlean.proxy").setLevel(logging.INFO)
    url = f"http://{args.host}:{args.port}"
    print(
        f"tokenlean proxy on {url}\n"
        f"  ANTHROPIC_BASE_URL={url}   OPENAI_BASE_URL={url}/v1\n"
        f"  stats: {url}/tokenlean/stats   (Ctrl-C stops and prints the savings)",
        file=sys.stderr,
    )
    try:
        serve(app, args.host, args.port)
    except OSError as exc:
        print(f"tokenlean proxy: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    print_summary(app)
    return 0
