"""The token-saving core: head+tail of old tool outputs, word compression, the early-exit rule.

Framework-free pieces of :class:`tokenlean.langchain.TokenSavingMiddleware`: the settings
(:mod:`~tokenlean.token_saving.policy`), head+tail compression
(:mod:`~tokenlean.token_saving.head_tail`), word-level compression with a pluggable classifier
(:mod:`~tokenlean.token_saving.words`, :mod:`~tokenlean.token_saving.anthropic_classifier`), the
planner that decides which message gets what and when (:mod:`~tokenlean.token_saving.plan`), and
the early-exit rule (:mod:`~tokenlean.token_saving.early_exit`).
"""

from __future__ import annotations

from tokenlean.token_saving.anthropic_classifier import make_anthropic_classifier
from tokenlean.token_saving.head_tail import compress_tool_output
from tokenlean.token_saving.policy import CompressionPolicy
from tokenlean.token_saving.stats import TokenSavingStats
from tokenlean.token_saving.words import WordClassifier, compress_words

__all__ = [
    "CompressionPolicy",
    "TokenSavingStats",
    "WordClassifier",
    "compress_tool_output",
    "compress_words",
    "make_anthropic_classifier",
]
