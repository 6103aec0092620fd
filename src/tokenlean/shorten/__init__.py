"""Text in, shorter text out: the framework-free shortening core.

:func:`shorten` handles logs and test output, scripts' results, JSON records, file views with
line numbers, source files, documents, listings and browser pages, each on purpose; see its
docstring. Everything here is pure and deterministic, and runs in linear time.

``tokenlean.shorten`` (the top-level package's attribute) is the function, so import the
submodules with ``from tokenlean.shorten.options import ShortenOptions``, not with
``import tokenlean.shorten.options as ...``.
"""

from __future__ import annotations

from tokenlean.shorten.classify import error_lines
from tokenlean.shorten.core import shorten
from tokenlean.shorten.markers import Retrieval
from tokenlean.shorten.options import DEFAULT_OPTIONS, ShortenOptions
from tokenlean.shorten.query import query_terms, query_text
from tokenlean.shorten.report import Kind, Omission, Reason, ShortenReport

__all__ = [
    "DEFAULT_OPTIONS",
    "Kind",
    "Omission",
    "Reason",
    "Retrieval",
    "ShortenOptions",
    "ShortenReport",
    "error_lines",
    "query_terms",
    "query_text",
    "shorten",
]
