"""The published reference ``TokenSavingMiddleware`` (``reasonblocks==0.2.5``) as a replay strategy.

Install with ``pip install -r benchmarks/requirements-peers.txt`` and load from the repository
root with ``tokenlean replay --plugin benchmarks.peers_reasonblocks``. ``reasonblocks`` is the
package's ``TokenSavingMiddleware()`` at its defaults (the same settings as ``token-saving``).
"""

from __future__ import annotations

from typing import Any

from tokenlean.replay.strategies import register


def _reasonblocks() -> list[Any]:
    from reasonblocks import TokenSavingMiddleware

    return [TokenSavingMiddleware()]


register(
    "reasonblocks",
    _reasonblocks,
    "reasonblocks 0.2.5 TokenSavingMiddleware() at its defaults",
)
