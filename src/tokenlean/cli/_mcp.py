"""``tokenlean mcp``: serve ``read_original`` over an originals folder to an agent, over stdio.

Pair it with a proxy started with ``--retrieval mcp`` (markers then name the tool and a handle
rather than a file) and register it with the agent, e.g. ``claude mcp add tokenlean -- tokenlean
mcp`` or, in Codex's ``config.toml``, ``[mcp_servers.tokenlean] command = "tokenlean"
args = ["mcp"]``. On another machine than the proxy: ``-- ssh PROXY-HOST tokenlean mcp``, or,
with a proxy keeping originals on Redis, ``tokenlean mcp --originals redis://HOST:PORT/DB``
(the password from ``$TOKENLEAN_REDIS_PASSWORD``).
"""

from __future__ import annotations

import argparse
import sys

from tokenlean.cli._command import add_command
from tokenlean.cli._originals import parse_originals

__all__ = ["add_subcommand", "run"]


def add_subcommand(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds ``tokenlean mcp``."""
    summary = "serve read_original over the originals folder as an MCP server (stdio)"
    p = add_command(sub, "mcp", __doc__, summary)
    p.add_argument(
        "--originals",
        type=parse_originals,
        metavar="DIR|URL",
        default=None,
        help="the folder (or redis://HOST:PORT/DB) the proxy keeps originals in "
        "(default: ~/.cache/tokenlean/originals)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tokenlean.mcp import server

    try:
        app = server(args.originals)
    except (ValueError, ImportError) as exc:  # a folder another user owns; no redis package
        print(f"tokenlean mcp: {exc}", file=sys.stderr)
        return 2
    app.run("stdio")
    return 0
