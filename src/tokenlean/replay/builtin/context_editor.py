"""Replay strategies for :class:`tokenlean.langchain.ContextEditorMiddleware`.

``context-editor`` runs at the defaults (cache-aware: 30k trigger, keep 3, batches of 5, Anthropic
pricing, a clearing must pay back within a tenth of the calls made so far); ``context-editor-plain``
clears whenever the request passes the trigger, as the reference editor does. The ``-10k`` variants
use a lower trigger so the editor fires on most of the recorded trajectories; they are for
comparisons at the same trigger and keep count (``benchmarks.peers_langchain`` registers
LangChain's editor).
"""

from __future__ import annotations

from typing import Any

from tokenlean.context_editor import Mode
from tokenlean.replay._strategies import register

LOW_TRIGGER = 10_000


def _editor(mode: Mode, trigger: int | None = None) -> Any:
    from tokenlean.langchain.context_editor import ContextEditorMiddleware

    if trigger is None:
        return lambda: [ContextEditorMiddleware(mode=mode)]
    return lambda: [ContextEditorMiddleware(mode=mode, trigger_tokens=trigger)]


register(
    "context-editor",
    _editor("cache_aware"),
    "clear old results past 30k tokens (keep 3, batches of 5) when it pays for the cache re-write",
)
register(
    "context-editor-plain",
    _editor("plain"),
    "context-editor as the reference: clear in batches of 5 whenever past 30k tokens",
)
register(
    "context-editor-10k",
    _editor("cache_aware", LOW_TRIGGER),
    "context-editor with a 10k trigger",
    default=False,
)
register(
    "context-editor-plain-10k",
    _editor("plain", LOW_TRIGGER),
    "context-editor-plain with a 10k trigger",
    default=False,
)
