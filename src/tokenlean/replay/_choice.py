"""Which strategies the default replay runs on one agent's sessions: no middleware, the
recommended stack for the provider of the sessions' models, and that provider's own clearing
where it has one (when a strategy of that name is registered)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from tokenlean.replay._bill import Session
from tokenlean.replay._strategies import BASELINE, all_strategies

__all__ = ["RECOMMENDED", "default_strategies"]

#: The recommended stack of each provider; a provider without one gets Anthropic's, whose
#: cache prices (writes at 1.25x) are the strictest judge of a broken prefix.
RECOMMENDED = {"anthropic": "recommended-anthropic", "openai": "recommended-openai"}
#: Each provider's server-side clearing, replayed beside the stack.
CLEARING = {"anthropic": "anthropic-clear-tool-uses"}
#: Why a provider's own tool has no row: what it does cannot be replayed offline.
NO_OFFLINE_MODEL = {
    "openai": "OpenAI's own context tool (Responses compaction) has no row: a model writes "
    "its summary, which no offline replay can reproduce",
}


def default_strategies(agent: str, sessions: Sequence[Session]) -> tuple[list[str], list[str]]:
    """The strategies to replay on ``agent``'s ``sessions``, and notes on how they were picked
    (a provider told by the models' names; a clearing that is not registered)."""
    counts = Counter(s.provider for s in sessions if s.provider in RECOMMENDED)
    provider = counts.most_common(1)[0][0] if counts else None
    notes = []
    if len({s.provider for s in sessions}) > 1 or provider is None:
        said = ", ".join(
            f"{p or 'unknown'} x{n}" for p, n in Counter(s.provider for s in sessions).items()
        )
        chosen = provider or "anthropic"
        notes.append(f"recommended-{chosen}: picked by the providers of the models ({said})")
    provider = provider or "anthropic"
    names = [BASELINE, RECOMMENDED[provider]]
    registered = {s.name for s in all_strategies()}
    clearing = CLEARING.get(provider)
    if clearing in registered:
        names.append(clearing)
    elif clearing:
        notes.append(f"the provider's own clearing ({clearing}) is not in this version: no row")
    if provider in NO_OFFLINE_MODEL:
        notes.append(NO_OFFLINE_MODEL[provider])
    return names, notes
