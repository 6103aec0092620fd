"""The proxy's own endpoints, answered before anything is forwarded: ``GET /tokenlean/stats``
(the sessions' statistics) and ``GET /metrics`` (:mod:`tokenlean.proxy._metrics`).
"""

from __future__ import annotations

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tokenlean.proxy._errors import error_response
from tokenlean.proxy._guard import authorized
from tokenlean.proxy._metrics import metrics_route
from tokenlean.proxy._workers import SharedFigures

__all__ = ["admin_routes"]


def admin_routes(figures: SharedFigures) -> list[Route]:
    """The routes of ``GET /tokenlean/stats`` and ``GET /metrics``, both reading ``figures``."""
    return [_stats_route(figures), metrics_route(figures.exposition)]


def _stats_route(figures: SharedFigures) -> Route:
    """Every session for a request with the token; otherwise only the session it names."""

    async def endpoint(request: Request) -> Response:
        # Off the event loop: with --workers, it reads and writes the workers' files.
        if authorized(request.scope):
            return JSONResponse(await anyio.to_thread.run_sync(figures.snapshot))
        named = request.headers.get("x-tokenlean-session")
        if not named:
            message = (
                "every session's statistics need the proxy's token (--token); a client sees "
                "its own session's with the header x-tokenlean-session: <its session id>"
            )
            return error_response(403, "permission_error", message)
        return JSONResponse(await anyio.to_thread.run_sync(figures.snapshot, named))

    return Route("/tokenlean/stats", endpoint, methods=["GET"])
