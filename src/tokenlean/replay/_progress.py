"""A replay's progress on stderr: on a terminal, one line redrawn in place with the work done
and an estimate of the time left; elsewhere (a CI log, a file) only a final line, so a log
holds no flood of progress lines."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["EtaProgress"]


class EtaProgress:
    """Counts steps of work of unequal sizes (``total``: the sum of their sizes) and says how
    much is left; the time left is the time so far scaled by the share of the work not done
    (a replay's steps take time in proportion to the size of the trace they replay)."""

    def __init__(
        self,
        total: float,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.total = max(total, 1e-9)
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.clock = clock
        self.start = clock()
        self.done = 0.0
        self.steps = 0

    def step(self, size: float, what: str = "") -> None:
        """One step of ``size`` done; on a terminal, the line redrawn."""
        self.done += size
        self.steps += 1
        if self.tty:
            line = f"{self.bar()} {what}"[:78]
            print(f"\r{line:<78}", end="", file=self.stream, flush=True)

    def bar(self, width: int = 24) -> str:
        share = min(self.done / self.total, 1.0)
        filled = round(width * share)
        elapsed = self.clock() - self.start
        left = elapsed * (1 - share) / share if share else None
        eta = "" if left is None else f", about {_duration(left)} left"
        return f"[{'#' * filled}{'.' * (width - filled)}] {share:4.0%} {_duration(elapsed)}{eta}"

    def finish(self, what: str) -> None:
        """The final line: ``what`` was done, and in how long."""
        end = "\r" + " " * 78 + "\r" if self.tty else ""
        took = _duration(self.clock() - self.start)
        print(f"{end}tokenlean: {what} in {took}", file=self.stream, flush=True)


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s"
