"""What a Redis originals store sends its server: Lua scripts in pipelines and single commands,
over one connection made at the first call, failing together as one outage.

When the server cannot be reached, every call raises
:class:`~tokenlean.store.StoreUnavailable` at once for :data:`RETRY_AFTER` seconds rather than
each wait for it. The outage is logged once, with the password hidden, and so is its end.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from tokenlean import _redis_scripts as scripts
from tokenlean._redis_url import connect, hide_password, redis_module
from tokenlean.store import StoreUnavailable

__all__ = ["RETRY_AFTER", "ServerCalls"]

log = logging.getLogger("tokenlean.store")

#: After a failure, calls fail at once for this long (seconds) rather than each wait for a
#: server that is down.
RETRY_AFTER = 5.0
_SOURCES = {
    "touch": scripts.TOUCH,
    "get": scripts.GET,
    "put": scripts.PUT,
    "sweep": scripts.SWEEP,
}

T = TypeVar("T")


class ServerCalls:
    """Calls to the server at ``url`` (``shown``: the URL as logs and errors name it, without
    the password). Nothing connects until the first call."""

    def __init__(self, url: str, shown: str) -> None:
        self._url = url
        self.shown = shown
        self._client: Any = None
        self._scripts: dict[str, Any] = {}
        self._down_until: float | None = None  # monotonic; None: reachable, as far as known
        self._lock = threading.Lock()

    @property
    def reachable(self) -> bool:
        """Whether the last call reached the server (``False`` during an outage)."""
        return self._down_until is None

    def run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Script ``name`` on ``keys`` and ``args``: its result."""
        return self.run_many(name, [(keys, args)])[0]

    def run_many(
        self, name: str, calls: list[tuple[list[str], list[Any]]], *, read: str | None = None
    ) -> list[Any]:
        """Script ``name`` once per ``(keys, args)`` of ``calls``, in one round trip (a
        pipeline of EVALSHA, with the script loaded and the pipeline sent again when the
        server has lost it); each call's result, after the value of key ``read`` if given."""
        lost = redis_module().exceptions.NoScriptError

        def run(client: Any) -> list[Any]:
            script = self._script(client, name)
            for _ in range(2):
                pipe = client.pipeline(transaction=False)
                if read is not None:
                    pipe.get(read)
                for keys, args in calls:
                    pipe.evalsha(script.sha, len(keys), *keys, *args)
                results: list[Any] = pipe.execute(raise_on_error=False)
                if not any(isinstance(result, lost) for result in results):
                    break
                client.script_load(script.script)
            for result in results:
                if isinstance(result, Exception):
                    raise result
            return results

        return self.call(run)

    def call(self, action: Callable[[Any], T]) -> T:
        """``action(client)``, or :class:`StoreUnavailable` (logged once per outage)."""
        if self._down_until is not None and time.monotonic() < self._down_until:
            raise StoreUnavailable(f"the originals store {self.shown} is unreachable")
        redis = redis_module()
        try:
            result = action(self._connected())
        except redis.RedisError as exc:
            self._fail(exc)
            raise StoreUnavailable(f"the originals store {self.shown} is unreachable") from None
        if self._down_until is not None:
            self._down_until = None
            log.warning("tokenlean: the originals store %s is reachable again", self.shown)
        return result

    def _script(self, client: Any, name: str) -> Any:
        if name not in self._scripts:  # its SHA and source (run_many loads it where it is lost)
            self._scripts[name] = client.register_script(_SOURCES[name])
        return self._scripts[name]

    def _fail(self, exc: Exception) -> None:
        if self._down_until is None:
            reason = hide_password(f"{type(exc).__name__}: {exc}", self._url)
            log.warning(
                "tokenlean: the originals store %s cannot be reached (%s); requests go "
                "upstream unshortened until it can",
                self.shown,
                reason,
            )
        self._down_until = time.monotonic() + RETRY_AFTER

    def _connected(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = connect(self._url)
            return self._client
