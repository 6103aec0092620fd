"""The server under the proxy: it wakes once a tick when idle, and at once when told to stop."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable

import httpx
import pytest

from tokenlean.proxy import BackgroundProxy, ProxySettings, _server, create_app
from tokenlean.testing.upstream import FakeUpstream


def _proxy(upstream_url: str) -> BackgroundProxy:
    return BackgroundProxy(create_app(ProxySettings(upstream=upstream_url))).start()


def _stopped_within(proxy: BackgroundProxy, stop: Callable[[], None], seconds: float) -> bool:
    started = time.monotonic()
    stop()
    proxy._thread.join(seconds)
    return not proxy._thread.is_alive() and time.monotonic() - started < seconds


def test_stop_wakes_an_idle_proxy_at_once(
    monkeypatch: pytest.MonkeyPatch, upstream: FakeUpstream
) -> None:
    monkeypatch.setattr(_server, "TICK_SECONDS", 60.0)  # a stop that waited for it would fail
    proxy = _proxy(upstream.url)
    try:
        assert httpx.get(proxy.url + "/tokenlean/stats").status_code == 403  # serving (no token)
        time.sleep(0.2)  # idle: the server waits for its next tick
        assert _stopped_within(proxy, proxy._server.stop, 5.0)
    finally:
        proxy.stop()


def test_a_signal_wakes_an_idle_proxy_at_once(
    monkeypatch: pytest.MonkeyPatch, upstream: FakeUpstream
) -> None:
    """What uvicorn calls on SIGINT or SIGTERM (in the main thread; here from another one)."""
    monkeypatch.setattr(_server, "TICK_SECONDS", 60.0)
    proxy = _proxy(upstream.url)
    try:
        time.sleep(0.2)
        handle = proxy._server.handle_exit
        assert _stopped_within(proxy, lambda: handle(signal.SIGTERM, None), 5.0)
    finally:
        proxy.stop()


def test_an_idle_proxy_wakes_once_a_tick_not_ten_times(
    monkeypatch: pytest.MonkeyPatch, upstream: FakeUpstream
) -> None:
    ticks: list[int] = []
    on_tick = _server._Server.on_tick

    async def counted(self: _server._Server, counter: int) -> bool:
        ticks.append(counter)
        return await on_tick(self, counter)

    monkeypatch.setattr(_server._Server, "on_tick", counted)
    proxy = _proxy(upstream.url)
    try:
        ticks.clear()
        threading.Event().wait(1.5)
        # uvicorn's own loop ticks 15 times in 1.5 s; once a second is 1 or 2 ticks
        assert 1 <= len(ticks) <= 3
        assert all(counter % 10 == 0 for counter in ticks)  # each does the once-a-second chores
    finally:
        proxy.stop()
