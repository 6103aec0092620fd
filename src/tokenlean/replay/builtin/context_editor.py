"""Replay strategies for :class:`tokenlean.langchain.ContextEditorMiddleware`.

``context-editor`` and ``context-editor-cache-aware`` run at the defaults (30k trigger, keep 3,
batches of 5, Anthropic pricing for the cache-aware mode). The ``-10k`` variants use a lower
trigger so the editor fires on most of the recorded trajectories; they are for comparisons at
the same trigger and keep count (``benchmarks.peers_langchain`` registers LangChain's editor).
"""

from __future__ import annotations

from typing import Any

from tokenlean.context_editor import Mode
from tokenlean.replay.strategies import register

LOW_TRIGGER = 10_000


def _editor(mode: Mode, trigger: int | None = None) -> Any:
    from tokenlean.langchain.context_editor import ContextEditorMiddleware

    if trigger is None:
        return lambda: [ContextEditorMiddleware(mode=mode)]
    return lambda: [ContextEditorMiddleware(mode=mode, trigger_tokens=trigger)]


register(
    "context-editor",
    _editor("plain"),
    "clear old tool results in batches of 5 past 30k tokens, keep 3",
)
register(
    "context-editor-cache-aware",
    _editor("cache_aware"),
    "context-editor, clearing a batch only when it pays for the cache re-write (Anthropic)",
)
register(
    "context-editor-10k",
    _editor("plain", LOW_TRIGGER),
    "context-editor with a 10k trigger",
    default=False,
)
register(
    "context-editor-cache-aware-10k",
    _editor("cache_aware", LOW_TRIGGER),
    "context-editor-cache-aware with a 10k trigger",
    default=False,
)
