"""What the proxy saved: per request (a log line), per session (``GET /tokenlean/stats``), and
in total (the summary printed when it stops); :mod:`tokenlean.proxy._totals` has the sums and
how they read.

Token counts are estimates. For a body the rewrite changed, "in" and "sent" are the rewrite's
own figures (``tokens_before`` and ``tokens_after`` of its result, over the whole request), as
are the results and inputs shortened; for any other body, nothing was removed and both are the
estimate (:class:`tokenlean.tokens.EstimateCounter`) of its blocks. "Billed" applies the
provider's cache pricing from :mod:`tokenlean.cost` to the share of a request's block estimates
that is a cached prefix (see :mod:`tokenlean.proxy._sessions` for the rule), in units of one
uncached input token: multiply by the model's input price for money. With ``by_model``, each
request is priced by the model it names (its body's ``model``; Gemini's, in the path) from the
genai-prices catalogue (:func:`tokenlean.prices.pricing_for`), a model it does not know at its
API's pricing (logged once per model); each unit is then that model's own input token.

Nothing here parses a body the proxy already parsed: the statistics read the parse that
travels with :class:`~tokenlean.proxy._rewrite.Prepared`, and the rewritten body's own values.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tokenlean.cost import CachePricing
from tokenlean.proxy._ab import newest_turn
from tokenlean.proxy._arms import ArmBook, priced_request
from tokenlean.proxy._metrics import Metrics
from tokenlean.proxy._pricing import billed, model_named, model_pricing
from tokenlean.proxy._rewrite import Prepared
from tokenlean.proxy._scan import ScannedBody, scan_body
from tokenlean.proxy._sessions import (
    Block,
    BlockCounter,
    PrefixHistory,
    labels_named,
    session_key,
)
from tokenlean.proxy._settings import MAX_SESSIONS, MAX_STATS_BYTES
from tokenlean.proxy._stat_states import merged_snapshot, session_state
from tokenlean.proxy._totals import RequestRecord, Totals
from tokenlean.proxy._usage import AnswerReader, Usage
from tokenlean.raw import Api, list_key

__all__ = ["StatsBook"]

log = logging.getLogger("tokenlean.proxy")


@dataclass(slots=True)
class Session:
    api: Api
    key_source: str
    totals: Totals = field(default_factory=Totals)
    history_in: PrefixHistory = field(default_factory=PrefixHistory)
    history_sent: PrefixHistory = field(default_factory=PrefixHistory)
    first_seen: float = field(default_factory=time.time)
    last_seen: float = field(default_factory=time.time)
    pricing: str = ""  # the name of the pricing its latest request was billed at


def _history_bytes(session: Session) -> int:
    return session.history_in.size + session.history_sent.size


def _received(api: Api, prepared: Prepared) -> ScannedBody | None:
    """The client's body as the rewrite parsed it; parsed here, once, when no rewrite ran (so
    forwarding alone parses nothing on the request's path)."""
    return prepared.body if prepared.parsed else scan_body(prepared.raw, list_key(api))


class StatsBook:
    """Per-session sums; thread-safe, since requests are counted off the event loop.

    At most ``max_sessions`` sessions are kept, within ``max_bytes`` of the prompts they keep
    to estimate caching; the least recently seen is dropped first (what it counted stays in the
    total); ``salt`` keys the session labels (random when not given).
    ``pricing`` prices each API's requests; with ``by_model``, a request naming a model the
    catalogue knows is priced as that model, with ``output_price`` (when given) as its output.
    """

    def __init__(
        self,
        pricing: Mapping[Api, CachePricing],
        *,
        max_sessions: int = MAX_SESSIONS,
        max_bytes: int = MAX_STATS_BYTES,
        salt: bytes | None = None,
        by_model: bool = False,
        output_price: float | None = None,
        arms: ArmBook | None = None,
    ) -> None:
        self.arms = arms  # the A/B arms' books, when the proxy runs an A/B test
        self._pricing = pricing
        self._by_model = by_model
        self._output_price = output_price
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._unread: dict[str, int] = {}  # bodies forwarded unread, by reason (few reasons)
        self._cancelled = 0  # rewrites stopped because their client left
        self._lock = threading.Lock()
        self._counter = BlockCounter()
        self._max_sessions = max_sessions
        self._max_bytes = max_bytes
        self.history_bytes = 0  # what the sessions' prompt histories hold (PrefixHistory.size)
        self._salt = salt or secrets.token_bytes(16)
        self._dropped = Totals()  # the sums of the sessions dropped from the table
        self._dropped_sessions = 0
        self.metrics = Metrics()  # what GET /metrics serves: counters that only grow

    def record(
        self,
        api: Api,
        headers: Mapping[str, str],
        prepared: Prepared,
        status: int,
        answer: AnswerReader | None = None,
        path: str = "",
        seconds: float = 0.0,
    ) -> RequestRecord | None:
        """Count one request (sent to ``path``, answered in ``seconds``), with the usage its
        ``answer`` reported (none read: output unknown); None when its body was not a JSON
        object (nothing to count)."""
        start = time.thread_time()  # CPU time: what counting costs, however busy the machine
        received = _received(api, prepared)
        if received is None:
            reason = (prepared.unread or "not a JSON object").split(" (")[0]
            with self._lock:
                self._unread[reason] = self._unread.get(reason, 0) + 1
            return None
        label, source = session_key(api, headers, received.values, salt=self._salt)
        blocks_in = self._counter.blocks(api, received)
        outcome = prepared.outcome
        blocks_sent = (
            blocks_in
            if outcome is None
            else self._counter.rewritten(api, received, blocks_in, outcome.body)
        )
        counted = sum(t for _, t in blocks_in)
        usage = None if answer is None else answer.usage()
        model = model_named(api, path, received.values)
        pricing = self._pricing_of(api, model)
        if self.arms is not None:  # an A/B test: the arm's own sums, from the usage
            self._count_arm(label, api, model, received.values, usage, pricing, status, seconds)
        with self._lock:
            session = self._session(label, api, source)
            one = Totals(
                requests=1,
                rewritten=int(outcome is not None),
                rewrite_failures=int(prepared.failure is not None),
                upstream_errors=int(status >= 400),
                tokens_in=outcome.tokens_before if outcome else counted,
                tokens_sent=outcome.tokens_after if outcome else counted,
                results_shortened=outcome.results_shortened if outcome else 0,
                inputs_shortened=outcome.inputs_shortened if outcome else 0,
                rewrite_seconds=prepared.seconds,
            )
            one.billed_in = billed(pricing, one.tokens_in, blocks_in, session.history_in)
            one.billed_sent = billed(pricing, one.tokens_sent, blocks_sent, session.history_sent)
            self._add_history(session, blocks_in, blocks_sent)
            session.pricing = pricing.name
            one.answered(usage, pricing.for_prompt(one.tokens_in).output)
            one.count_seconds = time.thread_time() - start
            session.totals.add(one)
            self.metrics.observe(api, status, one)
            session.last_seen = time.time()
            self._trim()
        return RequestRecord(label, status, one)

    def cancelled_rewrite(self) -> None:
        """Count a rewrite stopped because its client left (nothing went upstream)."""
        with self._lock:
            self._cancelled += 1

    def _add_history(
        self, session: Session, blocks_in: Sequence[Block], blocks_sent: Sequence[Block]
    ) -> None:
        """Extend the session's prompt histories, keeping the table's byte count (locked)."""
        self.history_bytes -= _history_bytes(session)
        session.history_in.add(blocks_in)
        session.history_sent.add(blocks_sent)
        self.history_bytes += _history_bytes(session)

    def _session(self, label: str, api: Api, source: str) -> Session:
        """The session named ``label``, made the most recent; a new one may drop the oldest."""
        session = self._sessions.get(label)
        if session is not None:
            self._sessions.move_to_end(label)
            return session
        session = self._sessions[label] = Session(api, source)
        return session

    def _trim(self) -> None:
        """Drop the least recently seen sessions past the bounds (never the one just seen)."""
        while len(self._sessions) > 1 and (
            len(self._sessions) > self._max_sessions or self.history_bytes > self._max_bytes
        ):
            _, dropped = self._sessions.popitem(last=False)
            self.history_bytes -= _history_bytes(dropped)
            self._dropped.add(dropped.totals)
            self._dropped_sessions += 1

    def _count_arm(
        self,
        label: str,
        api: Api,
        model: str | None,
        values: Mapping[str, Any],
        usage: Usage | None,
        pricing: CachePricing,
        status: int,
        seconds: float,
    ) -> None:
        assert self.arms is not None, "called in an A/B test only"
        one = priced_request(usage, pricing, status, newest_turn(api, values), seconds)
        self.arms.observe(label, api, model or "", one)

    def tick(self) -> None:
        """Finish the A/B sessions idle long enough, when no request comes to do it."""
        if self.arms is not None:
            self.arms.sweep()

    def _pricing_of(self, api: Api, model: str | None) -> CachePricing:
        """The pricing of one request to ``api`` naming ``model``."""
        preset = self._pricing[api]
        if not self._by_model or model is None:
            return preset
        return model_pricing(api, model, preset, output_price=self._output_price)

    def snapshot(
        self, named: str | None = None, states: Iterable[Mapping[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The JSON served at ``GET /tokenlean/stats``: every session, or only the one a client
        names (its ``x-tokenlean-session``, or its own id such as ``metadata.user_id``); with
        ``states``, over those books' :meth:`state` instead (every ``--workers`` process's)."""
        only = None if named is None else labels_named(named, salt=self._salt)
        return merged_snapshot([self.state()] if states is None else states, only)

    def state(self) -> dict[str, Any]:
        """Every session's sums and what was dropped, as JSON (for :meth:`snapshot`)."""
        with self._lock:
            sessions = {
                label: session_state(
                    s.totals,
                    api=s.api,
                    key=s.key_source,
                    first_seen=s.first_seen,
                    last_seen=s.last_seen,
                    pricing=s.pricing,
                )
                for label, s in self._sessions.items()
            }
            return {
                "sessions": sessions,
                "dropped": asdict(self._dropped),
                "sessions_dropped": self._dropped_sessions,
                "forwarded_unread": dict(self._unread),
                "rewrites_cancelled": self._cancelled,
            }
