"""Fixtures for the proxy tests: a fake provider and the proxy in front of it, on real sockets."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from tokenlean.proxy import BackgroundProxy, ProxySettings, Rewriter, create_app
from tokenlean.testing.upstream import FakeUpstream

from .proxy_support import ProxyFactory


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as fake:
        yield fake


@pytest.fixture
def make_proxy(upstream: FakeUpstream) -> Iterator[ProxyFactory]:
    """Starts a proxy (to the fake upstream unless ``upstream=`` says otherwise)."""
    started: list[BackgroundProxy] = []

    def make(rewriter: Rewriter | None = None, **settings: Any) -> BackgroundProxy:
        base = ProxySettings(upstream=upstream.url, connect_timeout=2.0)
        app = create_app(replace(base, **settings), rewriter=rewriter)
        proxy = BackgroundProxy(app).start()
        started.append(proxy)
        return proxy

    yield make
    for proxy in started:
        proxy.stop()
