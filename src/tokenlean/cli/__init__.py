"""The ``tokenlean`` command: one module per subcommand, each adding itself to the parser.

``tokenlean replay`` measures strategies on recorded runs (:mod:`tokenlean.cli.replay`);
``tokenlean shorten`` shortens a log in a shell pipeline (:mod:`tokenlean.cli.shorten`);
``tokenlean proxy`` serves the same savings to any agent over HTTP (:mod:`tokenlean.cli.proxy`);
``tokenlean wrap claude|codex`` runs a coding agent through it (:mod:`tokenlean.cli.wrap`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

SubcommandSetup = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

#: Modules that add subcommands: each defines ``add_subcommand(subparsers)``.
SUBCOMMAND_MODULES: list[str] = [
    "tokenlean.cli.replay",
    "tokenlean.cli.shorten",
    "tokenlean.cli.proxy",
    "tokenlean.cli.wrap",
]


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(prog="tokenlean", description="Cheaper long-running agents.")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in SUBCOMMAND_MODULES:
        importlib.import_module(module).add_subcommand(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
