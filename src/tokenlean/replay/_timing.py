"""Measure the time middleware spends, without changing what ``create_agent`` sees.

:func:`timed` wraps a middleware in a proxy whose class overrides exactly the hooks the original
overrides (``create_agent`` decides which graph nodes to build from that), forwards jump
configuration, state schema, tools and name, and adds the time spent in each hook to a
:class:`Stopwatch`. For ``wrap_*`` hooks the time inside ``handler`` (the model, the tool, or
inner middleware) is subtracted, so nested middleware is never counted twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from langchain.agents.middleware import AgentMiddleware

__all__ = ["Stopwatch", "timed"]

_STATE_HOOKS = ("before_agent", "before_model", "after_model", "after_agent")
_WRAP_HOOKS = ("wrap_model_call", "wrap_tool_call")


class Stopwatch:
    """Accumulated seconds, read from ``clock`` (wall time by default; ``time.thread_time``
    counts only this thread's CPU, which other load on the machine does not inflate)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.seconds = 0.0
        self.clock = clock


def _overrides(cls: type, name: str) -> bool:
    return getattr(cls, name) is not getattr(AgentMiddleware, name)


def _state_hook(name: str, is_async: bool) -> Callable[..., Any]:
    if is_async:

        async def ahook(self: Any, state: Any, runtime: Any) -> Any:
            start = self._tl_watch.clock()
            try:
                return await getattr(self._tl_inner, name)(state, runtime)
            finally:
                self._tl_watch.seconds += self._tl_watch.clock() - start

        return ahook

    def hook(self: Any, state: Any, runtime: Any) -> Any:
        start = self._tl_watch.clock()
        try:
            return getattr(self._tl_inner, name)(state, runtime)
        finally:
            self._tl_watch.seconds += self._tl_watch.clock() - start

    return hook


def _wrap_hook(name: str, is_async: bool) -> Callable[..., Any]:
    if is_async:

        async def awrap(self: Any, request: Any, handler: Any) -> Any:
            inside = 0.0

            async def timed_handler(req: Any) -> Any:
                nonlocal inside
                start = self._tl_watch.clock()
                try:
                    return await handler(req)
                finally:
                    inside += self._tl_watch.clock() - start

            start = self._tl_watch.clock()
            try:
                return await getattr(self._tl_inner, name)(request, timed_handler)
            finally:
                self._tl_watch.seconds += self._tl_watch.clock() - start - inside

        return awrap

    def wrap(self: Any, request: Any, handler: Any) -> Any:
        inside = 0.0

        def timed_handler(req: Any) -> Any:
            nonlocal inside
            start = self._tl_watch.clock()
            try:
                return handler(req)
            finally:
                inside += self._tl_watch.clock() - start

        start = self._tl_watch.clock()
        try:
            return getattr(self._tl_inner, name)(request, timed_handler)
        finally:
            self._tl_watch.seconds += self._tl_watch.clock() - start - inside

    return wrap


def timed(middleware: AgentMiddleware[Any, Any], watch: Stopwatch) -> AgentMiddleware[Any, Any]:
    """A proxy of ``middleware`` that adds its hook time to ``watch``."""
    cls = type(middleware)
    namespace: dict[str, Any] = {
        "state_schema": middleware.state_schema,
        "name": property(lambda self: self._tl_inner.name),
    }
    for base, factory in [(h, _state_hook) for h in _STATE_HOOKS] + [
        (h, _wrap_hook) for h in _WRAP_HOOKS
    ]:
        for name, is_async in ((base, False), (f"a{base}", True)):
            if _overrides(cls, name):
                proxy = factory(name, is_async)
                jump = getattr(getattr(cls, name), "__can_jump_to__", None)
                if jump is not None:
                    proxy.__can_jump_to__ = jump  # type: ignore[attr-defined]
                namespace[name] = proxy
    proxy_cls = type(f"Timed{cls.__name__}", (AgentMiddleware,), namespace)
    instance: Any = object.__new__(proxy_cls)
    instance._tl_inner = middleware
    instance._tl_watch = watch
    instance.tools = list(getattr(middleware, "tools", []) or [])
    return instance  # type: ignore[no-any-return]
