"""A replay's runs priced by session: each session at its own model's prices (in dollars where
the catalogue knows them), summed per strategy over the sessions of one kind of agent.

A session is one agent session (its context windows together) or one trajectory file. Its
pricing is its model's (:func:`tokenlean.prices.pricing_for`), else its agent's provider's
preset, which holds ratios only: such a session has a row of its own but stays out of a total
in dollars (:class:`AgentBill` says which sessions a total covers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from tokenlean.cost import PRICING, CachePricing
from tokenlean.prices import CacheTtl, UnknownModelError, model_pricing, pricing_for, provider_of
from tokenlean.replay._formats import Trajectory, session_name
from tokenlean.replay._metrics import RunMetrics
from tokenlean.replay._parts import CallParts, billed_parts

__all__ = [
    "AGENTS",
    "AgentBill",
    "Row",
    "Session",
    "agent_bill",
    "agent_of",
    "session_of",
]

#: Each session format's agent, as reports name it, and the provider its models come from.
AGENTS: Mapping[str, tuple[str, str | None]] = {
    "claude_code": ("Claude Code", "anthropic"),
    "codex": ("Codex", "openai"),
    "opencode": ("OpenCode", None),
    "gemini_cli": ("gemini-cli", "google"),
}
#: The agent of a trajectory file (neutral JSON), which names no agent.
TRAJECTORIES = "trajectories"


@dataclass(frozen=True, slots=True)
class Session:
    """One session: its name, agent, model (as recorded), the provider of that model (its
    agent's, else the one its name points at) and the pricing it is billed at."""

    name: str
    agent: str
    model: str | None
    provider: str | None
    pricing: CachePricing

    @property
    def in_dollars(self) -> bool:
        return self.pricing.usd_per_mtok is not None


def agent_of(trajectory: Trajectory) -> str:
    """The agent that recorded ``trajectory`` (:data:`AGENTS`), or :data:`TRAJECTORIES`."""
    fmt = str(trajectory.meta.get("native_format"))
    return AGENTS[fmt][0] if fmt in AGENTS else TRAJECTORIES


def session_of(
    trajectory: Trajectory, model: str | None = None, cache_ttl: CacheTtl = "5m"
) -> Session:
    """``trajectory``'s session, priced as ``model`` when given (a preset's name or a model),
    else as the model the session used, its cache writes of the ``cache_ttl`` kind."""
    fmt = str(trajectory.meta.get("native_format", ""))
    name = session_name(trajectory) if fmt else trajectory.id
    used = trajectory.meta.get("model") if model is None else model
    used = used if isinstance(used, str) and used else None
    provider = AGENTS[fmt][1] if fmt in AGENTS else None
    provider = provider or provider_of(str(trajectory.meta.get("model") or ""))
    return Session(name, agent_of(trajectory), used, provider, _pricing(used, provider, cache_ttl))


def _pricing(model: str | None, provider: str | None, cache_ttl: CacheTtl) -> CachePricing:
    """The model's pricing; a name with a gateway's prefix (``github-copilot/gpt-5.4``) is
    priced as the bare model, which the catalogue knows where it does not know the gateway."""
    if model is not None and model in PRICING:
        return PRICING[model]
    for name in dict.fromkeys(m for m in (model, (model or "").rsplit("/", 1)[-1]) if m):
        try:
            return model_pricing(name, cache_ttl=cache_ttl)
        except (UnknownModelError, ValueError):
            continue
    return pricing_for(model, provider=provider, cache_ttl=cache_ttl)


@dataclass(frozen=True, slots=True)
class Row:
    """One strategy's figures over some runs: billed input and whole bill (dollars, or the
    pricing's units where ``dollars`` is False), cached-read and written tokens, references
    and prefix breaks; ``failed`` counts runs that failed (left out of the figures)."""

    calls: int = 0
    billed: float = 0.0
    whole: float = 0.0
    read: int = 0
    written: int = 0
    refs_total: int = 0
    refs_retained: int = 0
    breaks: int = 0
    failed: int = 0

    @property
    def recall(self) -> float:
        return self.refs_retained / self.refs_total if self.refs_total else 1.0

    def __add__(self, other: Row) -> Row:
        sums: dict[str, Any] = {f: getattr(self, f) + getattr(other, f) for f in _FIELDS}
        return Row(**sums)


_FIELDS = tuple(f.name for f in fields(Row))


def priced(run: RunMetrics, pricing: CachePricing) -> Row:
    """One run's :class:`Row` under ``pricing`` (in dollars where it has them)."""
    if run.error:
        return Row(failed=1)
    read = written = 0
    for prompt, cached, _ in run.call_tokens:
        if prompt >= pricing.min_cached:  # a shorter prompt is neither read nor written
            hit = pricing.for_prompt(prompt).billable_cached(min(cached, prompt))
            read, written = read + hit, written + prompt - hit
    scale = pricing.dollars(1.0) or 1.0
    return Row(
        calls=run.calls,
        billed=run.billed_under(pricing) * scale,
        whole=run.whole_under(pricing) * scale,
        read=read,
        written=written,
        refs_total=run.refs_total,
        refs_retained=run.refs_retained,
        breaks=run.prefix_breaks,
    )


@dataclass
class AgentBill:
    """One agent's sessions priced: ``rows[session][strategy]``; ``total[strategy]`` over the
    sessions in ``covered`` (those priced in dollars, or every one when none is); ``parts``:
    where the money went without middleware on those sessions (its parts, in the same unit)."""

    agent: str
    strategies: list[str]
    sessions: list[Session]
    rows: dict[str, dict[str, Row]] = field(default_factory=dict)
    total: dict[str, Row] = field(default_factory=dict)
    covered: list[str] = field(default_factory=list)
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def in_dollars(self) -> bool:
        return any(s.in_dollars for s in self.sessions)

    def to_dict(self) -> dict[str, Any]:
        """The priced report as JSON: sessions (model, pricing), rows, totals and parts; money
        in dollars where ``in_dollars``, else in each pricing's units."""
        return {
            "agent": self.agent,
            "in_dollars": self.in_dollars,
            "strategies": self.strategies,
            "sessions": [self._session_dict(s) for s in self.sessions],
            "total": {n: _row_dict(r) for n, r in self.total.items()},
            "where_the_money_went": {p: round(v, 6) for p, v in self.parts.items()},
        }

    def _session_dict(self, session: Session) -> dict[str, Any]:
        rows = self.rows[session.name]
        return {
            "name": session.name,
            "model": session.model,
            "pricing": session.pricing.name,
            "usd_per_mtok": session.pricing.usd_per_mtok,
            "in_total": session.name in self.covered,
            "rows": {n: _row_dict(r) for n, r in rows.items()},
        }


def _row_dict(row: Row) -> dict[str, Any]:
    out: dict[str, Any] = {f: getattr(row, f) for f in _FIELDS}
    out.update(billed=round(row.billed, 6), whole=round(row.whole, 6), recall=round(row.recall, 5))
    return out


def agent_bill(
    agent: str,
    strategies: Sequence[str],
    sessions: Mapping[str, Session],
    runs: Iterable[RunMetrics],
    parts: Mapping[str, Sequence[CallParts]] | None = None,
) -> AgentBill:
    """Price ``runs`` (of ``agent``'s trajectories; ``sessions``: trajectory id -> session)
    per session and in total; ``parts``: each trajectory's :func:`none_parts`."""
    chosen = list(dict.fromkeys(sessions.values()))
    bill = AgentBill(agent, list(strategies), chosen)
    bill.rows = {s.name: {n: Row() for n in strategies} for s in chosen}
    for run in runs:
        session = sessions[run.trajectory]
        if run.strategy in bill.rows[session.name]:
            row = bill.rows[session.name][run.strategy]
            bill.rows[session.name][run.strategy] = row + priced(run, session.pricing)
    bill.covered = [s.name for s in chosen if s.in_dollars or not bill.in_dollars]
    bill.total = {n: sum((bill.rows[s][n] for s in bill.covered), Row()) for n in strategies}
    bill.parts = _parts(bill, sessions, parts or {})
    return bill


def _parts(
    bill: AgentBill, sessions: Mapping[str, Session], parts: Mapping[str, Sequence[CallParts]]
) -> dict[str, float]:
    out: dict[str, float] = {}
    for trajectory, session in sessions.items():
        if session.name not in bill.covered or trajectory not in parts:
            continue
        scale = session.pricing.dollars(1.0) or 1.0
        for part, units in billed_parts(parts[trajectory], session.pricing).items():
            out[part] = out.get(part, 0.0) + units * scale
    return out
