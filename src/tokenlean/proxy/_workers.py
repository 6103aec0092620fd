"""One picture across the ``--workers`` processes: ``GET /metrics`` and ``GET /tokenlean/stats``
sum every worker's figures, whichever worker answers the scrape.

Each worker writes its figures (its counters, its A/B arms', its statistics book's sessions) to
its own file in a folder they share (``workers_dir``), replaced whole (write, then rename) after
the requests it has counted: at most once a second while requests keep coming, and within a
second of the last (:class:`~tokenlean.proxy._counting.CountingThread` tells it when). A scrape
writes its own file, then sums every file. The sums only grow: a worker's file only ever grows,
each scrape reads every file at least as new as the one before it did, and the file of a worker
that died stays in the folder (a replacement starts its own), so a dashboard sees no reset;
another worker's latest requests show up within about a second.
The summary printed when the proxy stops stays each worker's own.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tokenlean.proxy._metrics import Metrics
from tokenlean.proxy._stats import StatsBook

__all__ = ["WRITE_EVERY", "SharedFigures", "WorkerFiles"]

log = logging.getLogger("tokenlean.proxy")

#: While requests keep coming, a worker writes its file at most this often (seconds).
WRITE_EVERY = 1.0
_SUFFIX = ".json"


class WorkerFiles:
    """This worker's file in ``folder`` (written from ``figures``), and the other workers'."""

    def __init__(self, folder: Path, figures: Callable[[], Mapping[str, Any]]) -> None:
        self._folder = folder
        self._figures = figures
        self._name = f"{os.getpid()}{_SUFFIX}"
        self._lock = threading.Lock()

    def write(self) -> Mapping[str, Any]:
        """Write this worker's figures (replacing what it wrote before); returns them."""
        # Taken and written under one lock, so that the file never goes back to older figures.
        with self._lock:
            figures = self._figures()
            path = self._folder / self._name
            partial = path.with_suffix(".tmp")
            try:
                partial.write_text(json.dumps(figures))
                partial.replace(path)  # a reader sees the old file or the new, never half
            except OSError as exc:  # the other workers' scrapes miss it; traffic goes on
                log.warning("tokenlean proxy: could not share this worker's figures: %s", exc)
            return figures

    def others(self) -> list[dict[str, Any]]:
        """The figures every other worker wrote last (an unreadable file is left out)."""
        found = []
        try:
            paths = sorted(p for p in self._folder.iterdir() if p.name.endswith(_SUFFIX))
        except OSError as exc:
            log.warning("tokenlean proxy: cannot read the workers' figures: %s", exc)
            return []
        for path in paths:
            if path.name == self._name:
                continue
            try:
                found.append(json.loads(path.read_text()))
            except (OSError, ValueError) as exc:
                log.warning("tokenlean proxy: skipped the figures in %s: %s", path.name, exc)
        return found


class SharedFigures:
    """What ``GET /metrics`` and ``GET /tokenlean/stats`` show: this worker's statistics book,
    plus the other workers' figures when they share a ``folder`` (None: one process)."""

    def __init__(self, book: StatsBook, folder: Path | None) -> None:
        self.book = book
        self.files = None if folder is None else WorkerFiles(folder, self._own)

    def _own(self) -> dict[str, Any]:
        arms = None if self.book.arms is None else self.book.arms.state()
        return {"metrics": self.book.metrics.state(), "arms": arms, "stats": self.book.state()}

    def write(self) -> None:
        """Share this worker's figures with the others (nothing to do in one process)."""
        if self.files is not None:
            self.files.write()

    def _every(self) -> list[Mapping[str, Any]] | None:
        """Every worker's figures as the files hold them, this one's written first (None in
        one process). Files only, not this worker's live figures beside the others' files:
        two workers answering in turn would each add its fresher self to the other's older
        file, and the second sum could be the smaller."""
        if self.files is None:
            return None
        return [self.files.write(), *self.files.others()]

    def exposition(self) -> str:
        """The Prometheus text of every worker's counters, summed."""
        every = self._every()
        if every is None:
            metrics = self.book.metrics
        else:
            metrics = Metrics()
            for figures in every:
                metrics.add_state(figures["metrics"])
        text = metrics.exposition()
        if self.book.arms is not None:
            arms = None if every is None else [f["arms"] for f in every if f.get("arms")]
            text += self.book.arms.exposition(arms)
        return text

    def snapshot(self, named: str | None = None) -> dict[str, Any]:
        """The statistics of every worker, summed (see :meth:`StatsBook.snapshot`)."""
        every = self._every()
        return self.book.snapshot(named, None if every is None else [f["stats"] for f in every])
