"""Replay strategies for :class:`~tokenlean.langchain.TokenBudgetMiddleware`.

Not replayed by default: a budget changes what the agent does, while a replay can only send the
recorded turns again (the scripted model ignores ``tool_choice``), so its figures show the
middleware's cost in bytes and cache breaks, not the savings of a shorter reply. Recorded
trajectories carry no usage, so every call is counted with the local estimate.
"""

from __future__ import annotations

from tokenlean.replay._strategies import middleware, register

__all__ = ["BUDGET", "TIGHT_BUDGET", "UNREACHABLE_BUDGET"]

#: Weighted tokens per reply at which the firing strategy wraps up: mid-way through every
#: bundled trajectory; short runs never reach it.
TIGHT_BUDGET = 100_000
#: So large that no recorded reply reaches it: measures the bookkeeping alone.
UNREACHABLE_BUDGET = 10**12


BUDGET = "tokenlean.langchain.budget:TokenBudgetMiddleware"

register(
    "budget-100k",
    middleware(BUDGET, token_budget=TIGHT_BUDGET, warn_at=0.8),
    "token budget of 100k weighted tokens per reply, warning at 80% (fires)",
    default=False,
)
register(
    "budget-unreached",
    middleware(BUDGET, token_budget=UNREACHABLE_BUDGET),
    "token budget too large to fire (bookkeeping overhead only)",
    default=False,
)
