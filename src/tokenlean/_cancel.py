"""Cooperative cancellation of a rewrite that no one waits for any more.

A proxy rewrites a long history on a worker thread; when its client disconnects, the answer has
no one to go to, and a thread cannot be stopped from outside. The way in that runs the rewrite
says how to tell (:func:`cancellable`), and the planner asks between turns
(:func:`stop_if_cancelled`): a rewrite stops within one turn of its client leaving instead of
planning the rest of a 30 MB history. Nothing is asked outside such a block, so every other way
in plans as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["Cancelled", "cancel_requested", "cancellable", "stop_if_cancelled"]

#: Whether the rewrite running in this context is no longer wanted (None: it always is).
_CANCELLED: ContextVar[Callable[[], bool] | None] = ContextVar("tokenlean_cancelled", default=None)


class Cancelled(BaseException):
    """Raised by :func:`stop_if_cancelled`. A :class:`BaseException`, as
    ``asyncio.CancelledError`` is: fail-open guards catch :class:`Exception` only, so a
    cancelled rewrite is not logged as a failure and no half-planned body goes anywhere."""


@contextmanager
def cancellable(cancelled: Callable[[], bool]) -> Iterator[None]:
    """Within the block, :func:`stop_if_cancelled` raises once ``cancelled()`` is true."""
    token = _CANCELLED.set(cancelled)
    try:
        yield
    finally:
        _CANCELLED.reset(token)


def cancel_requested() -> bool:
    """Whether the enclosing :func:`cancellable` block's work is no longer wanted."""
    cancelled = _CANCELLED.get()
    return cancelled is not None and cancelled()


def stop_if_cancelled() -> None:
    """Raise :class:`Cancelled` when the enclosing :func:`cancellable` block's work is no
    longer wanted; nothing otherwise (and nothing outside such a block)."""
    if cancel_requested():
        raise Cancelled
