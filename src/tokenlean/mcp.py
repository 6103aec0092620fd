"""``read_original`` as an MCP server over the originals: ``tokenlean mcp``.

The proxy (or an SDK wrapper, or the LiteLLM plug-in) with ``retrieval="mcp"`` writes markers
that name ``read_original`` and a handle rather than a file path (:class:`~tokenlean.readback.
ServedReadBack`); this server answers them from the folder, or from the Redis server the proxy
keeps them on (``redis://...``, :class:`~tokenlean.redis_store.RedisOriginalStore`), over stdio,
so any agent that takes MCP servers (Claude Code, Codex) reads originals back wherever it runs:
on the proxy's machine, on one that mounts the folder or reaches the server, or through ``ssh
PROXY-HOST tokenlean mcp``. It never writes an original nor lists the store, and reads only
names of the handle's shape; what it reads is marked used (so the sweeps keep it longest), and
it tells an original the sweeps pruned from an unknown handle. Needs the ``mcp`` extra.
"""

from __future__ import annotations

from pathlib import Path

from mcp.server.mcpserver import MCPServer

from tokenlean.redis_store import RedisOriginalStore, is_redis_url
from tokenlean.store import (
    RETRIEVAL_TOOL,
    FolderOriginalStore,
    default_originals_dir,
    excerpt,
    retrieval_description,
)

__all__ = ["read_original", "server"]


def read_original(
    store: FolderOriginalStore | RedisOriginalStore,
    handle: str,
    lines: str = "",
    pattern: str = "",
) -> str:
    """What the tool answers: the original's lines (a range, or those holding ``pattern``, or
    all of them), numbered as the markers count them; a sentence when there is none."""
    where = store.directory if isinstance(store, FolderOriginalStore) else store.url
    found = store.get("", handle.strip())
    if found is None and isinstance(store, RedisOriginalStore) and not store.reachable:
        return f"The originals store {where} cannot be reached now; ask again in a while."
    if found is None and store.evicted("", handle.strip()):
        return (
            f"The original {handle.strip()!r} was pruned from {where} (unused past "
            "the age limit, or past the size cap); rerun the command to see its output again."
        )
    if found is None:
        return f"No original with handle {handle.strip()!r} is kept in {where}."
    try:
        return excerpt(found.text, lines=lines or None, pattern=pattern or None)
    except ValueError as exc:  # a malformed range: the agent can ask again
        return str(exc)


def server(originals: Path | str | None = None) -> MCPServer:
    """The MCP server, reading ``originals``: a folder (default: the proxy's default folder)
    or a ``redis://`` URL."""
    store: FolderOriginalStore | RedisOriginalStore
    if is_redis_url(originals):
        store = RedisOriginalStore(originals)
    else:
        store = FolderOriginalStore(
            Path(originals or default_originals_dir()).expanduser().absolute()
        )
    app: MCPServer = MCPServer("tokenlean", instructions=retrieval_description(call_ids=False))

    def tool(handle: str, lines: str = "", pattern: str = "") -> str:
        return read_original(store, handle, lines, pattern)

    app.add_tool(tool, name=RETRIEVAL_TOOL, description=retrieval_description(call_ids=False))
    return app
