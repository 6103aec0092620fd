"""tokenlean: make long-running LLM agents cheaper without making them dumber.

The core (this package's top level) imports no framework; LangChain middleware lives in
:mod:`tokenlean.langchain` and the replay tooling in :mod:`tokenlean.replay`.
"""

from __future__ import annotations

from tokenlean.cost import ANTHROPIC, NO_CACHE, OPENAI, PRICING, CachePricing
from tokenlean.loop_guard import (
    Detection,
    LoopDetector,
    Step,
    build_steps,
    detect_stuck,
    loop_signals,
)
from tokenlean.shorten import ShortenReport, ShortenSettings, shorten
from tokenlean.token_saving import (
    TokenSavingStats,
    WordClassifier,
    compress_tool_output,
    make_anthropic_classifier,
)
from tokenlean.tokens import (
    EstimateCounter,
    TiktokenCounter,
    TokenCounter,
    VocabularyNotFoundError,
    count_request,
    default_counter,
)
from tokenlean.transcript import Edit, Message, ToolCall

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
