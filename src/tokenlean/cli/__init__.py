"""The ``tokenlean`` command: one module per subcommand, each adding itself to the parser.

``tokenlean replay`` measures strategies on recorded runs (:mod:`tokenlean.cli._replay`);
``tokenlean shorten`` shortens a log in a shell pipeline (:mod:`tokenlean.cli._shorten`);
``tokenlean proxy`` serves the same savings to any agent over HTTP (:mod:`tokenlean.cli._proxy`);
``tokenlean wrap claude|codex|gemini`` runs a coding agent through it (:mod:`tokenlean.cli._wrap`);
``tokenlean mcp`` serves its originals to agents as an MCP tool (:mod:`tokenlean.cli._mcp`);
``tokenlean originals prune`` bounds the folder they are kept in (:mod:`tokenlean.cli._originals`);
``tokenlean ab report`` reads the A/B logs of ``tokenlean proxy --ab`` (:mod:`tokenlean.cli._ab`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "EXTRA_OF_COMMAND",
    "EXTRA_OF_MODULE",
    "SUBCOMMAND_MODULES",
    "add_output_price",
    "build_parser",
    "main",
    "missing_extra",
]

SubcommandSetup = Callable[["argparse._SubParsersAction[argparse.ArgumentParser]"], None]

#: Modules that add subcommands: each defines ``add_subcommand(subparsers)``.
SUBCOMMAND_MODULES: list[str] = [
    "tokenlean.cli._replay",
    "tokenlean.cli._shorten",
    "tokenlean.cli._proxy",
    "tokenlean.cli._wrap",
    "tokenlean.cli._mcp",
    "tokenlean.cli._originals",
    "tokenlean.cli._ab",
]


#: The extra (``pip install 'tokenlean[EXTRA]'``) that provides each optional top-level module.
EXTRA_OF_MODULE: Mapping[str, str] = {
    "langchain": "langchain",
    "langchain_core": "langchain",
    "langgraph": "langchain",
    "tiktoken": "tiktoken",
    "anthropic": "anthropic",
    "openai": "openai",
    "starlette": "proxy",
    "uvicorn": "proxy",
    "httpx": "proxy",
    "mcp": "mcp",
}
#: The extra a subcommand needs as a whole (one install line covers all it imports).
EXTRA_OF_COMMAND: Mapping[str, str] = {"replay": "replay", "proxy": "proxy", "wrap": "proxy"}


def build_parser() -> argparse.ArgumentParser:
    import importlib

    from tokenlean import __version__

    parser = argparse.ArgumentParser(prog="tokenlean", description="Cheaper long-running agents.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in SUBCOMMAND_MODULES:
        importlib.import_module(module).add_subcommand(sub)
    return parser


def missing_extra(command: str, exc: ModuleNotFoundError) -> str | None:
    """What to tell a user whose install lacks the extra ``command`` needs (``None`` when the
    missing module is not one an extra provides: then it is a bug, not an install choice)."""
    top = (exc.name or "").partition(".")[0]
    extra = EXTRA_OF_MODULE.get(top)
    if extra is None:
        return None
    extra = EXTRA_OF_COMMAND.get(command, extra)
    return (
        f"tokenlean {command}: this install lacks the {top!r} package; "
        f"install the extra with: pip install 'tokenlean[{extra}]'"
    )


def add_output_price(p: argparse.ArgumentParser, where: str) -> None:
    """``--output-price X``: the price of an output token in the whole bill, for every command
    that reports one (``where`` says where it shows); checked where it is used."""
    p.add_argument(
        "--output-price",
        type=float,
        metavar="X",
        help=f"price of an output token, in uncached input tokens, {where} (default: each "
        "provider's, 5 for Anthropic and 4 for OpenAI)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except ModuleNotFoundError as exc:
        hint = missing_extra(args.command, exc)
        if hint is None:
            raise
        print(hint, file=sys.stderr)
        return 2
    return code


if __name__ == "__main__":
    sys.exit(main())
