"""The proxy's figures for a team's monitoring: ``GET /metrics`` in the Prometheus text format.

The statistics book feeds :class:`Metrics` one counted request at a time
(:meth:`Metrics.observe`, with the same figures the log line and ``GET /tokenlean/stats`` give),
so the counters only ever grow, whatever the book forgets of its sessions. Labels are the API
and the upstream's status only, so the series stay few. Written by hand (a few counters and one
histogram) rather than with a client library, so the ``proxy`` extra needs nothing more::

    tokenlean_requests_total{api="anthropic",status="200"} 42
    tokenlean_tokens_in_total{api="anthropic"} 1.2e6      # estimated prompt tokens received
    tokenlean_tokens_sent_total{api="anthropic"} 8.9e5    # ... and forwarded
    tokenlean_billed_in_total / tokenlean_billed_sent_total  # the same, priced with the cache
    tokenlean_estimated_saving_ratio{api="anthropic"} 0.21   # 1 - billed sent / billed in
    tokenlean_output_tokens_total{api="anthropic"} 5.1e4  # as the upstream reported them
    tokenlean_output_unknown_total{api="anthropic"} 2     # answers that reported none
    tokenlean_whole_bill_in_total / tokenlean_whole_bill_sent_total  # billed + output priced
    tokenlean_estimated_whole_bill_saving_ratio{api="anthropic"} 0.12
    tokenlean_rewrite_seconds_bucket{api="anthropic",le="0.01"} 40   # and _sum, _count
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

if TYPE_CHECKING:
    from tokenlean.proxy._totals import Totals

__all__ = ["CONTENT_TYPE", "REWRITE_BUCKETS", "Metrics", "metrics_route"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: Upper bounds (seconds) of the rewrite-time histogram: a small request takes about a
#: millisecond, a long coding session's history tens to hundreds.
REWRITE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

#: The help of each counter, by the field of :class:`~tokenlean.proxy._totals.Totals` it sums;
#: the metric is named after the field (but where :data:`_METRIC` says otherwise).
_COUNTERS = {
    "rewritten": "Requests whose body the rewrite changed.",
    "rewrite_failures": "Requests forwarded unchanged because the rewrite failed.",
    "tokens_in": "Estimated prompt tokens of the bodies received.",
    "tokens_sent": "Estimated prompt tokens of the bodies forwarded.",
    "billed_in": "Estimated billed input received, in uncached-token equivalents (cache priced).",
    "billed_sent": "Estimated billed input forwarded, in uncached-token equivalents "
    "(cache priced).",
    "results_shortened": "Tool results shortened (the same ones again on every request that "
    "re-sends them).",
    "inputs_shortened": "Past tool inputs cut.",
    "output_tokens": "Output tokens the upstream reported in its answers.",
    "output_unknown": "Requests whose answer reported no output tokens (not in the whole bill).",
    "whole_bill_in": "Estimated whole bill without the rewrite: billed input received plus "
    "output at the provider's output price, in uncached-token equivalents, over answers with "
    "output.",
    "whole_bill_sent": "Estimated whole bill: billed input forwarded plus output at the "
    "provider's output price, in uncached-token equivalents, over answers with output.",
    "upstream_input_tokens": "Prompt tokens the upstream reported (cached part included), "
    "where it did.",
    "upstream_cached_tokens": "Prompt tokens the upstream reported reading from its cache, "
    "where it did.",
}
_METRIC = {"rewritten": "rewritten_requests"}
#: name, help, and the two sums each saving ratio compares (1 - sent / in).
_RATIOS = (
    (
        "estimated_saving_ratio",
        "1 - billed_sent / billed_in, over every request so far.",
        "billed_in",
        "billed_sent",
    ),
    (
        "estimated_whole_bill_saving_ratio",
        "1 - whole_bill_sent / whole_bill_in, over every answer with output so far.",
        "whole_bill_in",
        "whole_bill_sent",
    ),
)


@dataclass(slots=True)
class _Series:
    """One API's sums and rewrite-time histogram."""

    sums: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    buckets: list[int] = field(default_factory=lambda: [0] * len(REWRITE_BUCKETS))
    seconds: float = 0.0
    count: int = 0


class Metrics:
    """Counters that only grow, fed one counted request at a time; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, int], int] = defaultdict(int)
        self._series: dict[str, _Series] = defaultdict(_Series)

    def observe(self, api: str, status: int, one: Totals) -> None:
        with self._lock:
            self._requests[api, status] += 1
            series = self._series[api]
            for name in _COUNTERS:
                series.sums[name] += getattr(one, name)
            for i, bound in enumerate(REWRITE_BUCKETS):
                series.buckets[i] += one.rewrite_seconds <= bound
            series.seconds += one.rewrite_seconds
            series.count += 1

    def state(self) -> dict[str, Any]:
        """The counters as JSON, for :meth:`add_state` in another process (``--workers``)."""
        with self._lock:
            series = {
                api: {
                    "sums": dict(s.sums),
                    "buckets": list(s.buckets),
                    "s": s.seconds,
                    "n": s.count,
                }
                for api, s in self._series.items()
            }
            requests = [[api, status, n] for (api, status), n in self._requests.items()]
            return {"requests": requests, "series": series}

    def add_state(self, state: Mapping[str, Any]) -> None:
        """Add the counters of another process's :meth:`state` to these."""
        with self._lock:
            for api, status, n in state["requests"]:
                self._requests[api, int(status)] += int(n)
            for api, data in state["series"].items():
                series = self._series[api]
                for name, value in data["sums"].items():
                    series.sums[name] += value
                series.buckets = [
                    a + b for a, b in zip(series.buckets, data["buckets"], strict=True)
                ]
                series.seconds += data["s"]
                series.count += data["n"]

    def exposition(self) -> str:
        """Every metric in the Prometheus text format (version 0.0.4)."""
        with self._lock:
            return "".join(f"{line}\n" for line in self._lines())

    def _lines(self) -> Iterator[str]:
        yield from _head(
            "requests_total",
            "Requests whose body the proxy read, by API and upstream status.",
            "counter",
        )
        for (api, status), n in sorted(self._requests.items()):
            yield f'tokenlean_requests_total{{api="{api}",status="{status}"}} {n}'
        apis = sorted(self._series.items())
        for name, text in _COUNTERS.items():
            metric = _METRIC.get(name, name)
            yield from _head(f"{metric}_total", text, "counter")
            yield from (
                f'tokenlean_{metric}_total{{api="{api}"}} {_number(s.sums[name])}'
                for api, s in apis
            )
        for metric, text, whole, part in _RATIOS:
            yield from _head(metric, text, "gauge")
            for api, s in apis:
                saved = 1 - s.sums[part] / s.sums[whole] if s.sums[whole] else 0.0
                yield f'tokenlean_{metric}{{api="{api}"}} {_number(saved)}'
        yield from _head(
            "rewrite_seconds", "Time spent parsing, rewriting and serialising a body.", "histogram"
        )
        for api, s in apis:
            yield from _histogram(api, s)


def _head(name: str, text: str, kind: str) -> Iterator[str]:
    yield f"# HELP tokenlean_{name} {text}"
    yield f"# TYPE tokenlean_{name} {kind}"


def _histogram(api: str, s: _Series) -> Iterator[str]:
    for bound, n in zip(REWRITE_BUCKETS, s.buckets, strict=True):
        yield f'tokenlean_rewrite_seconds_bucket{{api="{api}",le="{bound}"}} {n}'
    yield f'tokenlean_rewrite_seconds_bucket{{api="{api}",le="+Inf"}} {s.count}'
    yield f'tokenlean_rewrite_seconds_sum{{api="{api}"}} {_number(s.seconds)}'
    yield f'tokenlean_rewrite_seconds_count{{api="{api}"}} {s.count}'


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def metrics_route(exposition: Callable[[], str]) -> Route:
    """``GET /metrics``, serving what ``exposition`` writes (the statistics book's metrics and
    the A/B arms', summed over the ``--workers`` processes: :mod:`tokenlean.proxy._workers`)."""

    async def endpoint(request: Request) -> Response:
        # Off the event loop: with --workers, it reads and writes the workers' files.
        return Response(await anyio.to_thread.run_sync(exposition), media_type=CONTENT_TYPE)

    return Route("/metrics", endpoint, methods=["GET"])
