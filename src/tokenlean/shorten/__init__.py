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
from tokenlean.shorten._firstsight import FirstSightPlan, SeenLog, add_visible, plan_first_sight
from tokenlean.shorten._inputs import (
    RECOMMENDED_INPUTS,
    InputPlan,
    InputShorteningSettings,
    plan_inputs,
)
from tokenlean.shorten._markers import Retrieval
from tokenlean.shorten._options import DEFAULT_OPTIONS, ShortenSettings
from tokenlean.shorten._output_settings import (
    CAPABILITY,
    OFFER_TOOL,
    OfferTool,
    OutputShorteningSettings,
)
from tokenlean.shorten._query import query_terms, query_text
from tokenlean.shorten._report import Kind, Omission, Reason, ShortenReport
from tokenlean.shorten._seen import Seen
from tokenlean.shorten._select import KindChoice
from tokenlean.shorten._wrapped import readable

__all__ = [
    "CAPABILITY",
    "DEFAULT_OPTIONS",
    "OFFER_TOOL",
    "RECOMMENDED_INPUTS",
    "FirstSightPlan",
    "InputPlan",
    "InputShorteningSettings",
    "Kind",
    "KindChoice",
    "OfferTool",
    "Omission",
    "OutputShorteningSettings",
    "Reason",
    "Retrieval",
    "Seen",
    "SeenLog",
    "ShortenReport",
    "ShortenSettings",
    "add_visible",
    "error_lines",
    "plan_first_sight",
    "plan_inputs",
    "query_terms",
    "query_text",
    "readable",
    "shorten",
]
