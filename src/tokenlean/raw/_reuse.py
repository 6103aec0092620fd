"""The messages a rewrite writes, made once per original message and reused while it is re-sent.

A client re-sends its whole history every turn, and the rewrite writes the same shortened texts
into the same messages every time (the planner decides from the messages before, which do not
change). Patching them anew would make new message objects on every request, and everything
downstream that knows a message by its identity (the proxy's splice and statistics keep each
message's JSON text that way) would serialise them again: on a 200k-token history, about 150
shortened messages per request, twice. So for bodies whose message objects nobody mutates
(:func:`tokenlean.raw.frozen_bodies`), the patched message is kept per original message object
together with the patches that made it, and given again when the same patches come for it.

Bounded in entries and in the bytes of the texts kept (the original's and the patched one's);
least recently used first out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tokenlean._caches import held_bytes
from tokenlean._identity import ByIdentity

__all__ = ["REUSE_MAX_BYTES", "reused"]

Key = str | int
Patch = tuple[tuple[Key, ...], Any]
Patcher = Callable[[Any, Sequence[Patch]], Any]

#: The patched messages kept, with the originals they keep alive (which the proxy's recent
#: lists hold anyway while their conversation goes on).
REUSE_MAX_BYTES = 64 * 2**20
_PATCHED: ByIdentity[tuple[list[Patch], Any]] = ByIdentity(
    max_entries=200_000, max_bytes=REUSE_MAX_BYTES
)


def reused(body: Mapping[str, Any], patches: Sequence[Patch], patch: Patcher) -> list[Patch]:
    """``patches`` with those that reach inside one message of a list (``(key, i, ...)``)
    replaced by one patch setting that message whole: the message ``patch`` made for the same
    patches of the same original message before, or made now and kept."""
    groups: dict[tuple[Key, Key], list[Patch]] = {}
    out: list[Patch] = []
    for path, value in patches:
        if len(path) > 2 and isinstance(body.get(str(path[0])), list):
            groups.setdefault((path[0], path[1]), []).append((path[2:], value))
        else:
            out.append((path, value))
    for (key, i), inside in groups.items():
        message = body[str(key)][int(i)]
        out.append(((key, i), _message(message, inside, patch)))
    return out


def _message(message: Any, inside: list[Patch], patch: Patcher) -> Any:
    kept = _PATCHED.get(message)
    if kept is not None and kept[0] == inside:
        return kept[1]
    new = patch(message, inside)
    # the entry keeps the original message alive too, so it is charged for both
    charge = 256 * (1 + len(inside)) + held_bytes(message) + held_bytes(inside)
    _PATCHED.put(message, (inside, new), charge)
    return new
