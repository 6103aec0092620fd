"""How each subcommand of ``tokenlean`` adds itself: its one-line summary and its module's doc."""

from __future__ import annotations

import argparse

__all__ = ["add_command"]


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    doc: str | None,
    summary: str,
) -> argparse.ArgumentParser:
    """The parser of ``tokenlean NAME``: ``summary`` in ``tokenlean --help``; ``doc`` (its
    module's docstring) in its own help, laid out as written."""
    return sub.add_parser(
        name,
        help=summary,
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
