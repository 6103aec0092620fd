"""Which old tool results to clear from a request, and when clearing pays for itself.

The framework-free core of :class:`tokenlean.langchain.ContextEditorMiddleware`. Given the request
as it is about to be sent (a neutral :class:`RequestView`) and the results cleared on earlier
calls, :func:`plan_clearing` returns the full cleared set for this call. The set only grows, and
only by whole batches of the oldest eligible results, so a request that was cleared once keeps the
same bytes until the next batch: each batch costs at most one prompt-cache break.

Once the request as it will be sent (earlier clearing applied) passes the trigger, plain mode
clears every whole batch of old results: all but the newest ``keep``, oldest first, leaving out
excluded tools, non-text results and results too small to be worth a break. Clearing them all at
once, rather than just enough to get under the trigger, keeps the edit point close to the end of
the prompt on later edits and lets the request grow for many calls before the next one.

:mod:`~tokenlean.context_editor._cache` documents the cache-aware model.
"""

from __future__ import annotations

from tokenlean.context_editor._cache import CacheModel
from tokenlean.context_editor._clearing import (
    CLEARED_MARK,
    STRATEGY,
    apply_clearing,
    clearing_edits,
)
from tokenlean.context_editor._config import (
    DEFAULT_RETRIEVAL_TOOL,
    MODES,
    SAFETY_NET_SHARE,
    ClearedRecord,
    ClearedToolResult,
    Clearing,
    ContextEdit,
    ContextEditorSettings,
    Mode,
    PlaceholderFn,
    RequestView,
    TokenEstimator,
    default_placeholder,
    request_estimator,
)
from tokenlean.context_editor._ledger import RequestLedger
from tokenlean.context_editor._plan import ClearingPlan, plan_clearing, plan_ledger
from tokenlean.cost import expected_net_saving
from tokenlean.tokens import MemoCounter

__all__ = [
    "CLEARED_MARK",
    "DEFAULT_RETRIEVAL_TOOL",
    "MODES",
    "SAFETY_NET_SHARE",
    "STRATEGY",
    "CacheModel",
    "ClearedRecord",
    "ClearedToolResult",
    "Clearing",
    "ClearingPlan",
    "ContextEdit",
    "ContextEditorSettings",
    "MemoCounter",
    "Mode",
    "PlaceholderFn",
    "RequestLedger",
    "RequestView",
    "TokenEstimator",
    "apply_clearing",
    "clearing_edits",
    "default_placeholder",
    "expected_net_saving",
    "plan_clearing",
    "plan_ledger",
    "request_estimator",
]
