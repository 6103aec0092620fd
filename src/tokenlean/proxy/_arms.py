"""The A/B arms' books: what each arm cost by the upstream's own usage, served in ``/metrics``
with an ``arm`` label and written as one JSON line per finished session (what ``tokenlean ab
report`` reads, :mod:`tokenlean.ab`).

Figures come from the usage each answer reports (:mod:`tokenlean.proxy._usage`), never from
estimates: *input* is the prompt's tokens neither read from nor written to the cache, then
*cache read*, *cache write* and *output* tokens, and their cost at the model's prices
(:mod:`tokenlean.prices`; in units of the model's plain input token, and in dollars where the
catalogue prices the model). An answer that reports no usage counts as ``usage_unknown``.

A session is *finished*, and its line written, when it has been idle for ``idle`` seconds
(checked as requests come and once a minute), when the table of open sessions outgrows
``max_sessions`` (the least recently seen first), or when the proxy stops. A session that comes
back later starts a new *part*; each line names its part (this process's random id and a
number), so the report sums a session's parts, from several proxies and restarts alike, and
counts a line read twice once.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tokenlean.cost import CachePricing
from tokenlean.proxy._ab import ARMS, Arm, NewestTurn, arm_of
from tokenlean.proxy._totals import Sums
from tokenlean.proxy._usage import Usage
from tokenlean.raw import Api

__all__ = ["LOG_VERSION", "ArmBook", "ArmSums", "priced_request"]

log = logging.getLogger("tokenlean.proxy")

LOG_VERSION = 1


@dataclass(slots=True)
class ArmSums(Sums):
    """Sums over requests, from the upstream's usage: one per arm, one per open session."""

    requests: int = 0
    upstream_errors: int = 0
    usage_unknown: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0  # in plain input tokens of each request's model
    cost_usd: float = 0.0
    unpriced: int = 0  # requests with usage whose model has no dollar price
    tool_results: int = 0
    tool_errors: int = 0
    read_original_calls: int = 0
    latency_seconds: float = 0.0


def priced_request(
    usage: Usage | None, pricing: CachePricing, status: int, turn: NewestTurn, seconds: float
) -> ArmSums:
    """One request's sums: its usage priced as ``pricing`` prices its model."""
    one = ArmSums(
        requests=1,
        upstream_errors=int(status >= 400),
        tool_results=turn.tool_results,
        tool_errors=turn.tool_errors,
        read_original_calls=turn.read_original_calls,
        latency_seconds=seconds,
    )
    if usage is None or usage.input_tokens is None:
        one.usage_unknown = 1
        return one
    read, written = usage.cached_tokens or 0, usage.written_tokens or 0
    one.input_tokens = max(usage.input_tokens - read - written, 0)
    one.cache_read_tokens, one.cache_write_tokens = read, written
    one.output_tokens = usage.output_tokens
    priced = pricing.for_prompt(usage.input_tokens)
    # As tokenlean.cost bills it: the plain price is the write price over the write surcharge.
    plain = priced.uncached / max(pricing.uncached, 1.0)
    one.cost = (
        plain * one.input_tokens
        + priced.cached_read * read
        + priced.uncached * written
        + priced.output * one.output_tokens
    )
    dollars = pricing.dollars(one.cost)
    one.cost_usd, one.unpriced = (0.0, 1) if dollars is None else (dollars, 0)
    return one


@dataclass(slots=True)
class _Open:
    arm: Arm
    api: Api
    part: str
    model: str
    first: float
    last: float
    sums: ArmSums = field(default_factory=ArmSums)


class ArmBook:
    """Per-arm counters and open sessions; thread-safe. ``share``: the control arm's share of
    sessions; finished sessions go to ``log_path`` (None: to no file)."""

    def __init__(
        self,
        share: float,
        log_path: Path | None,
        *,
        idle: float,
        max_sessions: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.share = share
        self._path = log_path
        self._idle = idle
        self._max = max_sessions
        self._clock = clock
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._open: OrderedDict[str, _Open] = OrderedDict()
        self._arms = {arm: ArmSums() for arm in ARMS}
        self._sessions = dict.fromkeys(ARMS, 0)
        self._instance = secrets.token_hex(4)  # this process's parts are its own
        self._parts = 0

    def arm(self, label: str) -> Arm:
        return arm_of(label, self.share)

    def observe(self, label: str, api: Api, model: str, one: ArmSums) -> Arm:
        """Count one answered request of the session ``label``; returns its arm."""
        now = self._clock()
        with self._lock:
            session = self._open.pop(label, None)
            if session is None:
                session = self._start(label, api, model, now)
            self._open[label] = session  # the most recent last
            session.sums.add(one)
            session.last = now
            self._arms[session.arm].add(one)
            finished = self._finished(now)
        self._write(finished)
        return session.arm

    def _start(self, label: str, api: Api, model: str, now: float) -> _Open:
        arm = self.arm(label)
        self._sessions[arm] += 1
        self._parts += 1
        return _Open(arm, api, f"{self._instance}-{self._parts}", model, now, now)

    def _finished(self, now: float) -> list[tuple[str, _Open, str]]:
        """Pops the sessions idle too long and those past the table's bound (lock held)."""
        done = []
        while self._open:
            label, oldest = next(iter(self._open.items()))
            if now - oldest.last >= self._idle:
                done.append((label, self._open.pop(label), "idle"))
            elif len(self._open) > self._max:
                done.append((label, self._open.pop(label), "evicted"))
            else:
                break
        return done

    def sweep(self) -> None:
        """Write the sessions idle for long enough (called now and then without requests)."""
        with self._lock:
            finished = self._finished(self._clock())
        self._write(finished)

    def close(self) -> None:
        """Write every open session (the proxy stops)."""
        with self._lock:
            finished = [(label, s, "shutdown") for label, s in self._open.items()]
            self._open.clear()
        self._write(finished)

    def _write(self, finished: list[tuple[str, _Open, str]]) -> None:
        if not finished or self._path is None:
            return
        data = "".join(json.dumps(_line(*f), sort_keys=True) + "\n" for f in finished)
        try:  # one append per batch: lines of several processes never interleave mid-line
            with self._write_lock:
                fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, data.encode())
                finally:
                    os.close(fd)
        except OSError as exc:  # a log that cannot be written never stops the traffic
            log.warning("tokenlean proxy: could not write the A/B session log: %s", exc)

    def state(self) -> dict[str, Any]:
        """The arms' counters as JSON, summed by :meth:`exposition` in another process."""
        with self._lock:
            arms = {arm: asdict(sums) for arm, sums in self._arms.items()}
            return {"sessions": dict(self._sessions), "arms": arms}

    def exposition(self, states: Iterable[Mapping[str, Any]] | None = None) -> str:
        """The arms' counters in the Prometheus text format; with ``states``, the sum of those
        books' :meth:`state` instead (every ``--workers`` process's, this one's included)."""
        sessions, arms = dict.fromkeys(ARMS, 0), {arm: ArmSums() for arm in ARMS}
        for state in [self.state()] if states is None else states:
            for arm in ARMS:
                sessions[arm] += state["sessions"].get(arm, 0)
                arms[arm].add(ArmSums(**state["arms"].get(arm, {})))
        return "".join(f"{line}\n" for line in _lines(sessions, arms))


def _lines(sessions: Mapping[Arm, int], arms: Mapping[Arm, ArmSums]) -> Iterator[str]:
    yield "# HELP tokenlean_ab_sessions_total Sessions started in each A/B arm."
    yield "# TYPE tokenlean_ab_sessions_total counter"
    for arm in ARMS:
        yield f'tokenlean_ab_sessions_total{{arm="{arm}"}} {sessions[arm]}'
    for name, text in _HELP.items():
        yield f"# HELP tokenlean_ab_{name}_total {text}"
        yield f"# TYPE tokenlean_ab_{name}_total counter"
        for arm in ARMS:
            value = getattr(arms[arm], name)
            yield f'tokenlean_ab_{name}_total{{arm="{arm}"}} {_number(value)}'


_HELP: Mapping[str, str] = {
    "requests": "Requests answered in each A/B arm.",
    "upstream_errors": "Requests the upstream answered with an error status.",
    "usage_unknown": "Answers that reported no prompt usage (not in the token or cost sums).",
    "input_tokens": "Prompt tokens neither read from nor written to the cache, as reported.",
    "cache_read_tokens": "Prompt tokens read from the cache, as reported.",
    "cache_write_tokens": "Prompt tokens written to the cache, as reported.",
    "output_tokens": "Output tokens, as reported.",
    "cost": "Cost at each model's prices, in plain input tokens of the model.",
    "cost_usd": "Cost in dollars, over the requests whose model has a catalogue price.",
    "unpriced": "Requests with usage whose model has no dollar price.",
    "tool_results": "Tool results in the newest turn of each request.",
    "tool_errors": "Of those, tool results that report an error.",
    "read_original_calls": "Calls of read_original in the reply each request answers.",
    "latency_seconds": "Seconds from the request's body to the end of its answer, summed.",
}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _line(label: str, session: _Open, ended: str) -> dict[str, Any]:
    """One finished session (part) as its log line."""
    sums = asdict(session.sums)
    sums["cost_usd"] = None if session.sums.unpriced else round(session.sums.cost_usd, 6)
    sums["cost"] = round(session.sums.cost, 1)
    sums["latency_seconds"] = round(session.sums.latency_seconds, 3)
    return {
        "v": LOG_VERSION,
        "session": label,
        "arm": session.arm,
        "part": session.part,
        "api": session.api,
        "model": session.model,
        "first": round(session.first, 3),
        "last": round(session.last, 3),
        "ended": ended,
        **sums,
    }
