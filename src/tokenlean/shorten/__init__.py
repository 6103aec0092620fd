"""Text in, shorter text out: the framework-free shortening core.

:func:`shorten` handles logs and test output, scripts' results, JSON records, file views with
line numbers, source files, documents, listings and browser pages, each on purpose; see its
docstring. Everything here is pure and deterministic, and runs in linear time.

The modules here are private; everything meant for use is exported below. The first-sight
settings are here too (:class:`OutputShorteningSettings` for tool results,
:class:`InputShorteningSettings` for past tool inputs); the planner that applies them to a turn is
:func:`tokenlean.pipeline.plan_turn`. ``tokenlean.shorten`` as an attribute of the top-level
package is the function :func:`shorten`, so import names from here with
``from tokenlean.shorten import ShortenSettings``.
"""

from __future__ import annotations

from tokenlean.shorten._classify import error_lines
from tokenlean.shorten._core import shorten
from tokenlean.shorten._firstsight import (
    FirstSightPlan,
    OutputShorteningPolicy,
    OutputShorteningSettings,
    SeenLog,
)
from tokenlean.shorten._inputs import (
    RECOMMENDED_INPUTS,
    ArgumentPolicy,
    InputPlan,
    InputShorteningSettings,
)
from tokenlean.shorten._markers import Retrieval
from tokenlean.shorten._options import DEFAULT_OPTIONS, ShortenOptions, ShortenSettings
from tokenlean.shorten._query import query_terms, query_text
from tokenlean.shorten._report import Kind, Omission, Reason, ShortenReport

__all__ = [
    "DEFAULT_OPTIONS",
    "RECOMMENDED_INPUTS",
    "ArgumentPolicy",
    "FirstSightPlan",
    "InputPlan",
    "InputShorteningSettings",
    "Kind",
    "Omission",
    "OutputShorteningPolicy",
    "OutputShorteningSettings",
    "Reason",
    "Retrieval",
    "SeenLog",
    "ShortenOptions",
    "ShortenReport",
    "ShortenSettings",
    "error_lines",
    "query_terms",
    "query_text",
    "shorten",
]
