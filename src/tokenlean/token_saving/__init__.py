"""The token-saving core: head+tail of old tool outputs, word compression, the early-exit rule.

Framework-free pieces of :class:`tokenlean.langchain.TokenSavingMiddleware`: the settings
(:mod:`~tokenlean.token_saving._policy`), head+tail compression
(:mod:`~tokenlean.token_saving._head_tail`), word-level compression with a pluggable classifier
(:mod:`~tokenlean.token_saving._words`, :mod:`~tokenlean.token_saving._anthropic_classifier`), the
planner that decides which message gets what and when (:mod:`~tokenlean.token_saving._plan`) and
the entries it stores (:mod:`~tokenlean.token_saving._entries`), and the early-exit rule
(:mod:`~tokenlean.token_saving._early_exit`).
"""

from __future__ import annotations

from tokenlean.token_saving._anthropic_classifier import make_anthropic_classifier
from tokenlean.token_saving._early_exit import EarlyExitPolicy, SignalsFn, loop_detected
from tokenlean.token_saving._head_tail import compress_tool_output
from tokenlean.token_saving._plan import (
    CompressedEntry,
    compression_edits,
    plan_compressions,
    sent_tokens,
)
from tokenlean.token_saving._policy import CompressionSettings
from tokenlean.token_saving._stats import TokenSavingStats
from tokenlean.token_saving._words import WordClassifier, compress_words, make_heuristic_classifier

__all__ = [
    "CompressedEntry",
    "CompressionSettings",
    "EarlyExitPolicy",
    "SignalsFn",
    "TokenSavingStats",
    "WordClassifier",
    "compress_tool_output",
    "compress_words",
    "compression_edits",
    "loop_detected",
    "make_anthropic_classifier",
    "make_heuristic_classifier",
    "plan_compressions",
    "sent_tokens",
]
