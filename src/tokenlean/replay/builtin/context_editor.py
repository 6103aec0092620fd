"""Replay strategies for :class:`tokenlean.langchain.ContextEditorMiddleware`.

``context-editor`` runs at the defaults (cache-aware: 30k trigger, keep 6, batches of 5, Anthropic
pricing, a clearing must pay back within a tenth of the calls made so far); ``context-editor-plain``
clears whenever the request passes the trigger, keeping the newest 3, as the reference editor does.
The ``-10k`` variants use a lower trigger so the editor fires on most of the recorded trajectories;
they keep 3, for comparisons at the same trigger and keep count (``benchmarks.peers_langchain``
registers LangChain's editor).
"""

from __future__ import annotations

from typing import Any

from tokenlean.context_editor import Mode
from tokenlean.replay._strategies import Factory, middleware, register

__all__ = ["LOW_TRIGGER", "REFERENCE_KEEP"]

LOW_TRIGGER = 10_000


#: The reference editor's keep count, for the variants compared with it.
REFERENCE_KEEP = 3


def _editor(mode: Mode, trigger: int | None = None, keep: int | None = None) -> Factory:
    options: dict[str, Any] = {"mode": mode}
    if trigger is not None:
        options["trigger_tokens"] = trigger
    if keep is not None:
        options["keep"] = keep
    return middleware("tokenlean.langchain.context_editor:ContextEditorMiddleware", **options)


register(
    "context-editor",
    _editor("cache_aware"),
    "clear old results past 30k tokens (keep 6, batches of 5) when it pays for the cache re-write",
)
register(
    "context-editor-plain",
    _editor("plain", keep=REFERENCE_KEEP),
    "context-editor as the reference: clear in batches of 5 whenever past 30k tokens, keep 3",
)
register(
    "context-editor-10k",
    _editor("cache_aware", LOW_TRIGGER, REFERENCE_KEEP),
    "context-editor with a 10k trigger, keep 3 (the reference's)",
    default=False,
)
register(
    "context-editor-plain-10k",
    _editor("plain", LOW_TRIGGER, REFERENCE_KEEP),
    "context-editor-plain with a 10k trigger (keep 3)",
    default=False,
)
