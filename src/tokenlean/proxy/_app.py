"""The proxy as an ASGI app: its own endpoints (:mod:`tokenlean.proxy._admin`), every other
request forwarded with the bodies of the four chat APIs rewritten
(:mod:`tokenlean.proxy._forward`), the guard in front of them all (:mod:`tokenlean.proxy._guard`),
and what they share for the app's life (the upstream pool, the statistics and their thread).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Literal

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route

from tokenlean.prices import load_catalogue
from tokenlean.proxy._admin import admin_routes
from tokenlean.proxy._arms import ArmBook
from tokenlean.proxy._counting import CountingThread
from tokenlean.proxy._forward import Proxy
from tokenlean.proxy._guard import Guard
from tokenlean.proxy._rewrite import OwnRewriter, Rewriter, default_rewriter
from tokenlean.proxy._settings import ProxySettings
from tokenlean.proxy._stats import StatsBook

__all__ = ["create_app"]

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def _arm_book(settings: ProxySettings) -> ArmBook | None:
    if settings.ab_share is None:
        return None
    return ArmBook(
        settings.ab_share,
        settings.ab_log,
        idle=settings.ab_idle,
        max_sessions=settings.max_sessions,
    )


def _stats_book(settings: ProxySettings) -> StatsBook:
    if settings.price_by_model:
        load_catalogue()  # at start, not in the first request's time
    return StatsBook(
        settings.pricing(),
        max_sessions=settings.max_sessions,
        salt=settings.session_salt.encode(),
        by_model=settings.price_by_model,
        output_price=settings.output_price,
        arms=_arm_book(settings),
    )


def _lifespan(proxy: Proxy) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """What the app opens when it starts and closes when it stops."""
    stats = proxy.stats

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        proxy.counting = CountingThread(stats, after=proxy.figures.write)
        try:
            async with proxy.open():
                yield
        finally:  # every answered request is counted before the summary is read
            proxy.counting.close()
            if stats.arms is not None:  # the sessions still open are finished: logged
                stats.arms.close()

    return lifespan


def create_app(
    settings: ProxySettings | None = None,
    *,
    rewriter: Rewriter | Literal["default"] | None = "default",
) -> Starlette:
    """The proxy app. ``rewriter``: the default is ``tokenlean.raw``'s rewrite; None forwards
    every body unchanged; a callable replaces it (tests, embedders; it must be thread-safe, as
    up to ``settings.rewrite_threads`` requests are rewritten at once).

    ``app.state.stats`` is the :class:`StatsBook` behind ``GET /tokenlean/stats``.
    """
    settings = settings or ProxySettings()
    if isinstance(rewriter, str):
        rewriter = default_rewriter(
            settings.originals_dir,
            originals_url=settings.originals_url,
            max_bytes=settings.originals_max_bytes,
            max_age=settings.originals_max_age,
        )
    stats = _stats_book(settings)
    inline = isinstance(rewriter, OwnRewriter) and rewriter.local
    proxy = Proxy(settings, rewriter, stats, inline=inline)
    app = Starlette(
        routes=[
            *admin_routes(proxy.figures),
            Route("/{path:path}", proxy.handle, methods=_METHODS),
        ],
        middleware=[Middleware(Guard, settings=settings)],  # in front of every route
        lifespan=_lifespan(proxy),
    )
    app.state.settings = settings
    app.state.stats = stats
    app.state.rewriting = rewriter is not None
    app.state.inline_rewrites = inline  # small rewrites on the event loop (Proxy.inline)
    return app
