"""Fail open: an optimisation that fails is logged and the agent's request goes on unchanged.

Every way in (the LangChain middlewares, the raw-body rewrite, the SDK wrappers) saves tokens;
none of them may break the agent it serves. :func:`fail_open` is that rule written once, as a
context manager, so a sync hook and its async twin share it (an ``await`` may sit inside the
block) and the fallback reads as the line after it::

    with fail_open(logger, "context editor failed; sending the request unchanged"):
        return self._edit(request)
    return _Prepared(request, None)

Only :class:`Exception` is caught: ``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit`` and
``asyncio.CancelledError`` derive from :class:`BaseException` and always propagate, so a
cancelled run stops instead of going on half-optimised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import TracebackType

__all__ = ["FailOpen", "fail_open"]


class FailOpen:
    """The guard :func:`fail_open` returns; ``failed`` tells, after the block, whether it did."""

    __slots__ = ("_args", "_level", "_logger", "_message", "_on_error", "failed")

    def __init__(
        self,
        logger: logging.Logger,
        message: str,
        args: tuple[object, ...],
        level: int,
        on_error: Callable[[], object] | None,
    ) -> None:
        self._logger = logger
        self._message = message
        self._args = args
        self._level = level
        self._on_error = on_error
        self.failed = False

    def __enter__(self) -> FailOpen:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        if not isinstance(exc, Exception):  # no error, or one that must stop the run
            return False
        self.failed = True
        # What logger.exception does (at ERROR by default), with the traceback; stacklevel=2
        # names the function holding the ``with``, as the ``except`` block it replaces did.
        self._logger.log(self._level, self._message, *self._args, exc_info=exc, stacklevel=2)
        if self._on_error is not None:
            self._on_error()
        return True


def fail_open(
    logger: logging.Logger,
    message: str,
    *args: object,
    level: int = logging.ERROR,
    on_error: Callable[[], object] | None = None,
) -> FailOpen:
    """A context manager that logs an :class:`Exception` raised in its block and swallows it.

    ``message`` and ``args`` are the logger's (``%``-formatted only when the record is
    emitted); the record carries the traceback, at ``level`` (``logging.exception``'s ERROR
    unless a caller's failures are routine enough for WARNING). ``on_error`` runs after the
    record, e.g. to count the failure. Code after the block is the pass-through; where it
    must know whether the block finished, read the guard's ``failed``.
    """
    return FailOpen(logger, message, args, level, on_error)
