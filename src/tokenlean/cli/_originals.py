"""``tokenlean originals prune``: bound the folder of originals now, and say what went.

The proxy, the SDK wrappers and the LiteLLM callback keep originals in a folder (default
``~/.cache/tokenlean/originals``) or on a Redis server (``redis://HOST:PORT/DB``) and sweep it as
they write: originals unused for the age limit are deleted, then the least recently used until
the store is under its size cap. This runs the same sweep by hand (a store no proxy writes to
any more, or other limits); ``--dry-run`` only counts. Originals used in the last ten minutes
are kept past the size cap (in a folder, up to half the cap again): a conversation under way
may still point at them.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from tokenlean.cli._command import add_command
from tokenlean.store import ORIGINALS_MAX_AGE, ORIGINALS_MAX_BYTES

__all__ = [
    "add_limit_options",
    "add_subcommand",
    "parse_age",
    "parse_originals",
    "parse_size",
    "run_prune",
]

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)
_AGE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw]?)", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_AGE_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_originals(text: str) -> Path | str:
    """Where originals are kept: a ``redis://`` or ``rediss://`` URL as it is, else a folder."""
    from tokenlean.redis_store import is_redis_url

    return text if is_redis_url(text) else Path(text)


def parse_size(text: str) -> int:
    """``"1G"``, ``"500M"``, ``"2GiB"``, ``"1048576"``: bytes (K, M, G, T are powers of 1024)."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"a size such as 1G, 500M or 1048576, not {text!r}")
    return int(float(match[1]) * _SIZE_UNITS[match[2].lower()])


def parse_age(text: str) -> float:
    """``"7d"``, ``"12h"``, ``"30m"``, ``"2w"``, ``"3600"``: seconds."""
    match = _AGE.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"an age such as 7d, 12h, 30m or 3600 (s), not {text!r}")
    return float(match[1]) * _AGE_UNITS[match[2].lower()]


def add_limit_options(p: argparse.ArgumentParser, prefix: str) -> None:
    """``--{prefix}max-bytes`` and ``--{prefix}max-age`` (the store's defaults)."""
    p.add_argument(
        f"--{prefix}max-bytes",
        type=parse_size,
        metavar="SIZE",
        default=ORIGINALS_MAX_BYTES,
        help="size cap of the originals folder; the least recently used go first "
        "(default 1G; K/M/G/T are powers of 1024)",
    )
    p.add_argument(
        f"--{prefix}max-age",
        type=parse_age,
        metavar="AGE",
        default=ORIGINALS_MAX_AGE,
        help="originals unused this long are deleted (default 7d; s, m, h, d, w; at least 10m)",
    )


def add_subcommand(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds ``tokenlean originals prune``."""
    p = add_command(sub, "originals", __doc__, "manage the folder of originals (prune it)")
    actions = p.add_subparsers(dest="action", required=True)
    prune = actions.add_parser(
        "prune", help="delete originals past the limits now, and say what went"
    )
    prune.add_argument(
        "--dir",
        "--originals",
        dest="dir",
        type=parse_originals,
        metavar="DIR|URL",
        default=None,
        help="the originals folder, or redis://HOST:PORT/DB (default: "
        "~/.cache/tokenlean/originals)",
    )
    add_limit_options(prune, "")
    prune.add_argument("--dry-run", action="store_true", help="count only, delete nothing")
    prune.set_defaults(func=run_prune)


def run_prune(args: argparse.Namespace) -> int:
    from tokenlean.redis_store import RedisOriginalStore
    from tokenlean.store import FolderOriginalStore, default_originals_dir

    limits = {"max_bytes": args.max_bytes, "max_age": args.max_age}
    try:
        store: FolderOriginalStore | RedisOriginalStore
        if isinstance(args.dir, str):  # a Redis URL
            store = RedisOriginalStore(args.dir, **limits)
            where = store.url  # without its password
        else:
            where = str((args.dir or default_originals_dir()).expanduser().absolute())
            store = FolderOriginalStore(Path(where), **limits)
        pruned = store.prune(dry_run=args.dry_run)
    except (ValueError, OSError, ImportError) as exc:
        print(f"tokenlean originals prune: {exc}", file=sys.stderr)
        return 2
    verb = "would remove" if args.dry_run else "removed"
    print(
        f"{verb} {pruned.files} originals ({pruned.bytes:,} bytes) from {where}; "
        f"{pruned.kept_files} kept ({pruned.kept_bytes:,} bytes)"
    )
    return 0
