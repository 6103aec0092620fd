"""Counting answered requests off the request's path, one at a time, in the order they were
answered (:class:`~tokenlean.proxy._stats.StatsBook` does the counting)."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from tokenlean.proxy._rewrite import Prepared
from tokenlean.proxy._stats import StatsBook
from tokenlean.proxy._totals import log_line
from tokenlean.proxy._usage import AnswerReader
from tokenlean.proxy._workers import WRITE_EVERY
from tokenlean.raw import Api

__all__ = ["CountingThread"]

log = logging.getLogger("tokenlean.proxy")

#: Seconds the counting thread waits for a request before it sweeps idle A/B sessions.
_TICK = 60.0


class CountingThread:
    """Counts answered requests one at a time, in the order they were answered, off the
    request's path: a long history takes milliseconds to count, and neither the client's
    connection nor the next request should wait for it."""

    def __init__(self, book: StatsBook, after: Callable[[], None] | None = None) -> None:
        self._book = book
        # Told after counting, at most once a second while requests keep coming, and within a
        # second of the last one (the --workers processes share their figures then).
        self._after = after
        self._unsaid = False  # counted since ``after`` was last told
        self._told_at = 0.0
        self._jobs: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="tokenlean-stats", daemon=True)
        self._thread.start()

    def submit(
        self,
        method: str,
        path: str,
        api: Api,
        headers: Mapping[str, str],
        prepared: Prepared,
        status: int,
        answer: AnswerReader | None = None,
        seconds: float = 0.0,
    ) -> None:
        self._jobs.put((method, path, api, headers, prepared, status, answer, seconds))

    def _next(self) -> tuple[Any, ...] | None:
        """The next job; an empty one after a minute without any (time to sweep idle ones), or
        after a second when ``after`` has not been told of the latest counts."""
        try:
            return self._jobs.get(timeout=WRITE_EVERY if self._unsaid else _TICK)
        except queue.Empty:
            return ()

    def close(self, timeout: float = 30.0) -> None:
        """Count what is queued, then stop."""
        self._jobs.put(None)
        self._thread.join(timeout)
        self._tell()

    def _tell(self) -> None:
        self._unsaid, self._told_at = False, time.monotonic()
        if self._after is not None:
            try:
                self._after()
            except Exception as exc:  # as counting: never takes the proxy down
                log.warning("tokenlean proxy: after counting: %r", exc)

    def _run(self) -> None:
        while (job := self._next()) is not None:
            if job == ():
                self._book.tick()
            else:
                self._count(job)
                self._unsaid = True
            if self._unsaid and (job == () or time.monotonic() - self._told_at >= WRITE_EVERY):
                self._tell()

    def _count(self, job: tuple[Any, ...]) -> None:
        method, path, api, headers, prepared, status, answer, seconds = job
        try:
            record = self._book.record(api, headers, prepared, status, answer, path, seconds)
        except Exception as exc:  # counting must never take the proxy down
            log.warning("tokenlean proxy: could not count a request: %r", exc)
            return
        if record is not None:
            log.info("%s", log_line(method, path, record))
