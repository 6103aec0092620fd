"""tokenlean: make long-running LLM agents cheaper without making them dumber.

The core (this package's top level) imports no framework; LangChain middleware lives in
:mod:`tokenlean.langchain` and the replay tooling in :mod:`tokenlean.replay`.
"""

from __future__ import annotations

from tokenlean import _moved
from tokenlean.cost import ANTHROPIC, NO_CACHE, OPENAI, PRICING, CachePricing
from tokenlean.loop_guard._detect import Detection, LoopDetector, detect_stuck, loop_signals
from tokenlean.loop_guard._steps import Step, build_steps
from tokenlean.shorten import ShortenOptions, ShortenReport, ShortenSettings, shorten
from tokenlean.token_saving._anthropic_classifier import make_anthropic_classifier
from tokenlean.token_saving._head_tail import compress_tool_output
from tokenlean.token_saving._stats import TokenSavingStats
from tokenlean.token_saving._words import WordClassifier
from tokenlean.tokens import (
    EstimateCounter,
    TiktokenCounter,
    TokenCounter,
    VocabularyNotFoundError,
    count_request,
    default_counter,
)
from tokenlean.transcript import Edit, Message, ToolCall

_moved.install()  # old module paths keep working, with a DeprecationWarning

__version__ = "0.1.0"

__all__ = [
    "ANTHROPIC",
    "NO_CACHE",
    "OPENAI",
    "PRICING",
    "CachePricing",
    "Detection",
    "Edit",
    "EstimateCounter",
    "LoopDetector",
    "Message",
    "ShortenOptions",
    "ShortenReport",
    "ShortenSettings",
    "Step",
    "TiktokenCounter",
    "TokenCounter",
    "TokenSavingStats",
    "ToolCall",
    "VocabularyNotFoundError",
    "WordClassifier",
    "__version__",
    "build_steps",
    "compress_tool_output",
    "count_request",
    "default_counter",
    "detect_stuck",
    "loop_signals",
    "make_anthropic_classifier",
    "shorten",
]
