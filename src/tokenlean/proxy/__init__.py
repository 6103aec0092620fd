"""A local HTTP proxy that applies tokenlean to any agent speaking the provider APIs.

``POST /v1/messages`` (Anthropic), ``POST /v1/chat/completions`` and ``POST /v1/responses``
(OpenAI), ``POST /v1beta/models/{model}:generateContent`` and ``:streamGenerateContent`` (Gemini,
also under ``/v1``) have their bodies rewritten (first-sight shortening of tool results and past
tool inputs); every other request passes through untouched. Only loopback clients, or those
with the proxy's token, are served (see :mod:`tokenlean.proxy._guard`). Needs the ``proxy`` extra
(Starlette, uvicorn, httpx): ``pip install 'tokenlean[proxy]'``.
"""

from __future__ import annotations

MISSING_EXTRA = (
    "the tokenlean proxy needs Starlette, uvicorn and httpx: pip install 'tokenlean[proxy]'"
)

_EXTRA_MODULES = frozenset({"anyio", "httpx", "starlette", "uvicorn"})

try:
    from tokenlean.proxy._app import create_app
    from tokenlean.proxy._guard import TOKEN_HEADER, authorized, check_listen
    from tokenlean.proxy._rewrite import Prepared, RewriteOutcome, Rewriter, default_rewriter
    from tokenlean.proxy._server import BackgroundProxy, serve, serve_workers
    from tokenlean.proxy._settings import ProxySettings
    from tokenlean.proxy._stats import StatsBook
    from tokenlean.proxy._totals import summary_lines
    from tokenlean.raw import Api
    from tokenlean.store import default_originals_dir
except ImportError as _exc:
    if (_exc.name or "").split(".")[0] in _EXTRA_MODULES:
        raise ImportError(MISSING_EXTRA, name=_exc.name) from _exc
    raise

__all__ = [
    "MISSING_EXTRA",
    "TOKEN_HEADER",
    "Api",
    "BackgroundProxy",
    "Prepared",
    "ProxySettings",
    "RewriteOutcome",
    "Rewriter",
    "StatsBook",
    "authorized",
    "check_listen",
    "create_app",
    "default_originals_dir",
    "default_rewriter",
    "serve",
    "serve_workers",
    "summary_lines",
]
