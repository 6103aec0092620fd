"""The three loop-likelihood scores of :func:`tokenlean.loop_signals`, as pure functions.

Every score is in ``[0, 1]`` and rises as looping gets more likely:

- :func:`streak_score` turns a count of *redundant* steps (steps that only repeat what the agent
  already did, see :mod:`tokenlean.loop_guard._patterns`) into ``1 - 0.5 ** redundant``: 0 for
  none, 0.5 for one, 0.75 for two, 0.875 for three. It passes 0.7 (the reference middleware's
  firing level) at two redundant steps, which is exactly where the default stuck patterns fire.
- :func:`diversity_loss` is the *loss* of diversity over the last ``window`` steps:
  ``(n - distinct) / (window - 1)`` for ``n`` steps holding ``distinct`` different
  (action, observation) pairs. 0 when every recent step differs, 1 when a full window is one
  step over and over. Short histories score low by construction (``n`` < ``window``).
- :func:`hedge_score` is how much the recent thoughts hedge or doubt themselves: the mean over
  the last ``window`` distinct thoughts of ``min(1, weight / 2)``, where a strong phrase
  ("same error", "still failing", "not sure", "sorry", "again", ...) weighs 1 and a mild one
  ("maybe", "perhaps", "wait", "hmm", "let me try", ...) weighs 0.5, each phrase counted once.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence

from tokenlean import checks

__all__ = ["diversity_loss", "hedge_score", "streak_score", "thought_hedge"]

_STRONG = (
    r"same (?:error|issue|problem|result|output|failure)",
    r"still (?:fail\w*|not|doesn'?t|broken|the same|get\w*|see\w*|no)",
    r"(?:did|does|do)n'?t (?:work|help|fix|change)",
    r"not working",
    # "(?:try|trying|run\w*) (?:it |this |that )?again", linear: that form restarts at every "run"
    # inside one long word and rescans the word each time. Here each word is read once: it
    # contains "run" or ends in "try"/"trying" (lookaheads), then is taken whole ((?=(\w+))\1).
    r"(?<!\w)(?=\w*run|\w*(?:try|trying)(?!\w))(?=(\w+))\1 (?:it |this |that )?again",
    r"\bagain\b",
    r"\bstuck\b",
    r"going (?:in|around in) circles",
    r"not (?:sure|certain)",
    r"\bunsure\b",
    r"\bconfus\w*",
    r"(?:i )?(?:don'?t|do not) (?:know|understand)",
    r"no idea",
    r"\bapologi[sz]e",
    r"\bsorry\b",
    r"\bmy mistake\b|\bmistake\b",
)
_MILD = (
    r"\bmaybe\b",
    r"\bperhaps\b",
    r"\bmight\b",
    r"\bseems?\b",
    r"\bwait\b",
    r"\bhmm+\b",
    r"\bactually\b",
    r"let me try",
    r"(?:another|different|alternative) approach",
    r"\bunclear\b",
)
_PHRASES: tuple[tuple[re.Pattern[str], float], ...] = tuple(
    (re.compile(p, re.I), 1.0) for p in _STRONG
) + tuple((re.compile(p, re.I), 0.5) for p in _MILD)


def streak_score(redundant: int) -> float:
    """``1 - 0.5 ** redundant``: each redundant step halves the remaining doubt."""
    return 1.0 - 0.5 ** max(0, redundant)


def diversity_loss(keys: Sequence[Hashable], window: int) -> float:
    """How far the last ``window`` keys are from all being different (0) to all equal (1)."""
    checks.integer(window, "window", at_least=2)
    recent = keys[-window:]
    return (len(recent) - len(set(recent))) / (window - 1)


def thought_hedge(thought: str) -> float:
    """One thought's hedging, ``min(1, weight / 2)``."""
    weight = sum(w for pattern, w in _PHRASES if pattern.search(thought))
    return min(1.0, weight / 2)


def hedge_score(thoughts: Sequence[str], window: int) -> float:
    """Mean hedging of the last ``window`` distinct consecutive thoughts (empty ones skipped).

    Steps from one assistant turn share its thought; it is counted once.
    """
    checks.integer(window, "window", at_least=1)
    distinct: list[str] = []
    for thought in thoughts:
        if thought.strip() and (not distinct or distinct[-1] != thought):
            distinct.append(thought)
    recent = distinct[-window:]
    return sum(thought_hedge(t) for t in recent) / len(recent) if recent else 0.0
