"""The token-saving core: head+tail of old tool outputs, word compression, the early-exit rule.

Framework-free pieces of :class:`tokenlean.langchain.TokenSavingMiddleware`: the settings
(:mod:`~tokenlean.token_saving._policy`), head+tail compression
(:mod:`~tokenlean.token_saving._head_tail`), word-level compression with a pluggable classifier
(:mod:`~tokenlean.token_saving._words`, :mod:`~tokenlean.token_saving._anthropic_classifier`), the
planner that decides which message gets what and when (:mod:`~tokenlean.token_saving._plan`), and
the early-exit rule (:mod:`~tokenlean.token_saving._early_exit`).
"""

from __future__ import annotations

from tokenlean.token_saving._anthropic_classifier import make_anthropic_classifier
from tokenlean.token_saving._head_tail import compress_tool_output
from tokenlean.token_saving._policy import CompressionPolicy, CompressionSettings
from tokenlean.token_saving._stats import TokenSavingStats
from tokenlean.token_saving._words import WordClassifier, compress_words

__all__ = [
    "CompressionPolicy",
    "CompressionSettings",
    "TokenSavingStats",
    "WordClassifier",
    "compress_tool_output",
    "compress_words",
    "make_anthropic_classifier",
]
