"""``tokenlean proxy``: serve the tokenlean proxy for any agent that speaks the provider APIs.

Point the agent at it (``ANTHROPIC_BASE_URL=http://HOST:PORT`` for Anthropic clients,
``OPENAI_BASE_URL=http://HOST:PORT/v1`` for OpenAI ones, the base URL ``http://HOST:PORT`` for
Gemini ones). It rewrites the bodies of ``/v1/messages``, ``/v1/chat/completions``,
``/v1/responses`` and Gemini's ``generateContent`` / ``streamGenerateContent`` (first-sight
shortening of tool results, long inputs of calls that have run cut; the same bytes for the same
history on every request, so the prompt cache keeps hitting), passes everything else through,
logs what each request saved, serves ``GET /tokenlean/stats``, and prints a summary when it
stops (Ctrl-C).

It listens on loopback only unless --host says otherwise, which needs a shared secret (--token
or TOKENLEAN_PROXY_TOKEN): clients send it as the header x-tokenlean-token, or put it in the
base URL (http://HOST:PORT/t/TOKEN). Requests from browsers and for other host names (DNS
rebinding) are refused. ``--workers N`` serves N processes on the port: ``/metrics`` and
``/tokenlean/stats`` sum them all, each prints its own summary; the same history gets the same
bytes upstream whichever process forwards it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokenlean.cli import add_output_price
from tokenlean.cli._ab import ab_settings, add_ab_options
from tokenlean.cli._command import add_command
from tokenlean.cli._originals import add_limit_options, parse_originals

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "TOKEN_ENV",
    "WORKER_OPTIONS",
    "add_proxy_options",
    "add_subcommand",
    "build_app",
    "print_summary",
    "run",
    "worker_app",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
TOKEN_ENV = "TOKENLEAN_PROXY_TOKEN"
#: Addresses that listen on every interface: no one name a client uses can be allowed for them.
_EVERY_INTERFACE = frozenset({"", "0.0.0.0", "::", "[::]"})
#: How the ``--workers`` parent hands its options to each worker process it starts.
WORKER_OPTIONS = "TOKENLEAN_PROXY_WORKER_OPTIONS"


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
        type=parse_originals,
        metavar="DIR|URL",
        default=None,
        help="where originals of shortened results are kept: a folder, or redis://HOST:PORT/DB "
        "(rediss:// for TLS; password from $TOKENLEAN_REDIS_PASSWORD) shared by many proxies "
        "(default: ~/.cache/tokenlean/originals)",
    )
    add_limit_options(p, "originals-")
    p.add_argument(
        "--no-rewrite", action="store_true", help="forward bodies unchanged (measure, compare)"
    )
    p.add_argument(
        "--token",
        default=os.environ.get(TOKEN_ENV) or None,
        help=f"shared secret every request must carry (default: ${TOKEN_ENV}; prefer the "
        "variable, a command line is visible to other users)",
    )
    p.add_argument(
        "--retrieval",
        choices=["file", "mcp"],
        help="markers name the file, or read_original for `tokenlean mcp` (default: file; "
        "mcp with originals on Redis, which has no file to name)",
    )
    add_output_price(p, "in the whole bill of the log lines, stats and summary")


def add_subcommand(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds ``tokenlean proxy``."""
    summary = "serve a local proxy that applies tokenlean to any agent (Claude Code, Codex, SDKs)"
    p = add_command(sub, "proxy", __doc__, summary)
    p.add_argument("--host", default=DEFAULT_HOST, help=f"address to listen on ({DEFAULT_HOST})")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port ({DEFAULT_PORT})")
    add_proxy_options(p)
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name clients use to reach the proxy besides loopback ones and --host "
        "(repeat it; '*' for any); others are refused, against DNS rebinding",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no log line per request")
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="serve N processes on the port, for a team (default 1)",
    )
    _add_client_limits(p)
    add_ab_options(p)
    p.set_defaults(func=run)


def _add_client_limits(p: argparse.ArgumentParser) -> None:
    """How long a client may take to send a request, and how many connections it may hold."""
    p.add_argument(
        "--head-timeout",
        type=float,
        metavar="S",
        help="close a connection whose request head is not whole within S seconds",
    )
    p.add_argument(
        "--body-timeout",
        type=float,
        metavar="S",
        help="answer 408 to a request whose body is not whole within S seconds",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        metavar="N",
        help="client connections per process; past N, the oldest still sending its head is "
        "closed (default: a quarter of the open-file limit, ulimit -n)",
    )


def _client_limits(args: argparse.Namespace) -> dict[str, Any]:
    """The client limits given on the command line (the others keep ProxySettings' defaults)."""
    names = ("head_timeout", "body_timeout", "max_connections")
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def _allowed_hosts(args: argparse.Namespace) -> tuple[str, ...]:
    hosts = list(getattr(args, "allow_host", []))
    host = getattr(args, "host", DEFAULT_HOST)
    return (*hosts, host) if host not in _EVERY_INTERFACE else tuple(hosts)


def build_app(args: argparse.Namespace, command: str, host: str = DEFAULT_HOST) -> Starlette | None:
    """The proxy app for these options, listening on ``host``, or None after telling the user
    what is wrong."""
    try:
        from tokenlean import proxy
    except ImportError as exc:
        from tokenlean.cli import missing_extra

        hint = missing_extra(command, exc) if isinstance(exc, ModuleNotFoundError) else None
        print(hint or f"tokenlean {command}: {exc}", file=sys.stderr)
        return None
    url = args.originals if isinstance(args.originals, str) else None  # a Redis URL
    folder = None if url is not None else args.originals or proxy.default_originals_dir()
    try:
        settings = proxy.ProxySettings(
            upstream=args.upstream,
            originals_dir=folder,
            originals_url=url,
            originals_max_bytes=args.originals_max_bytes,
            originals_max_age=args.originals_max_age,
            token=args.token,
            allowed_hosts=_allowed_hosts(args),
            output_price=args.output_price,
            **_client_limits(args),
            workers_dir=getattr(args, "workers_dir", None),
            **ab_settings(args),
        )
        proxy.check_listen(host, settings)
        # Also opens the originals folder: one another user owns is refused here, at start.
        rewriter = proxy.default_rewriter(
            settings.originals_dir,
            originals_url=settings.originals_url,
            retrieval=args.retrieval,
            max_bytes=settings.originals_max_bytes,
            max_age=settings.originals_max_age,
        )
    except (ValueError, OSError, ImportError) as exc:  # ImportError: no redis package
        print(f"tokenlean {command}: {exc}", file=sys.stderr)
        return None
    return proxy.create_app(settings, rewriter=None if args.no_rewrite else rewriter)


def print_summary(app: Starlette) -> None:
    from tokenlean.proxy import summary_lines

    for line in summary_lines(app.state.stats.snapshot()):
        print(line, file=sys.stderr)


def _banner(url: str, token: bool) -> str:
    """How to point clients at the proxy; the token itself is never printed."""
    if not token:
        return (
            f"tokenlean proxy on {url}\n"
            f"  ANTHROPIC_BASE_URL={url}   OPENAI_BASE_URL={url}/v1\n"
            f"  stats: {url}/tokenlean/stats with x-tokenlean-session: <id> (your session's; "
            "every session's need --token)   (Ctrl-C stops and prints the savings)"
        )
    prefixed = f"{url}/t/${TOKEN_ENV}"
    return (
        f"tokenlean proxy on {url}, token required (header x-tokenlean-token, or in the URL)\n"
        f"  ANTHROPIC_BASE_URL={prefixed}   OPENAI_BASE_URL={prefixed}/v1\n"
        f"  stats: {url}/tokenlean/stats   (Ctrl-C stops and prints the savings)"
    )


def _log_requests(quiet: bool) -> None:
    if not quiet:
        logging.basicConfig(format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
        logging.getLogger("tokenlean.proxy").setLevel(logging.INFO)


def worker_app() -> Starlette:
    """One ``--workers`` process's app, built from the options its parent checked and passed
    on; it prints its own summary when it stops."""
    options = json.loads(os.environ[WORKER_OPTIONS])
    args = argparse.Namespace(**options)
    args.originals = parse_originals(args.originals) if args.originals else None
    args.workers_dir = Path(args.workers_dir)
    args.ab_log = Path(args.ab_log) if args.ab_log else None  # a string once through JSON
    _log_requests(args.quiet)
    app = build_app(args, "proxy", args.host)
    if app is None:
        raise SystemExit(2)
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(started: Starlette) -> AsyncIterator[None]:
        async with inner(started):
            yield
        print_summary(app)  # after the lifespan has counted every answered request

    app.router.lifespan_context = lifespan
    return app


def _serve(app: Starlette, args: argparse.Namespace) -> None:
    from tokenlean.proxy import serve, serve_workers

    if args.workers == 1:
        serve(app, args.host, args.port)
        print_summary(app)
        return
    # The workers share their figures in a folder of this run, so that /metrics and
    # /tokenlean/stats sum them all; it goes with the run.
    with tempfile.TemporaryDirectory(prefix="tokenlean-workers-") as shared:
        options = {k: v for k, v in vars(args).items() if k != "func"}
        options["workers_dir"] = shared
        os.environ[WORKER_OPTIONS] = json.dumps(options, default=str)
        settings = app.state.settings
        factory = f"{__name__}:worker_app"
        serve_workers(factory, args.host, args.port, args.workers, settings=settings)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        print("tokenlean proxy: --port must be between 0 and 65535", file=sys.stderr)
        return 2
    if args.workers < 1:
        print("tokenlean proxy: --workers must be at least 1", file=sys.stderr)
        return 2
    app = build_app(args, "proxy", args.host)  # also checks the options before any worker starts
    if app is None:
        return 2
    _log_requests(args.quiet)
    url = f"http://{args.host}:{args.port}"
    banner = _banner(url, args.token is not None)
    if args.workers > 1:
        banner = banner.replace(url, f"{url} ({args.workers} processes)", 1)
        # Every worker labels sessions (and draws their A/B arm) with the same secret.
        args.salt = args.salt or secrets.token_hex(16)
    if app.state.settings.ab_share is not None:
        s = app.state.settings
        banner += f"\n  A/B: {s.ab_share:g} of sessions in control; finished ones go to {s.ab_log}"
    print(banner, file=sys.stderr)
    try:
        _serve(app, args)
    except OSError as exc:
        print(f"tokenlean proxy: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    return 0
