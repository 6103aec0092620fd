"""A statistics book's state as JSON (what each ``--workers`` process writes to its file), and
the ``GET /tokenlean/stats`` answer summed over several such states, one per worker."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, fields
from typing import Any

from tokenlean.proxy._totals import Totals

__all__ = ["merged_snapshot", "session_state"]


def _totals(data: Mapping[str, Any]) -> Totals:
    return Totals(**{f.name: data.get(f.name, 0) for f in fields(Totals)})


def _add_session(into: dict[str, Any], label: str, session: Mapping[str, Any]) -> None:
    """Add one worker's view of a session to the others' (the same label in several)."""
    seen = into.get(label)
    if seen is None:
        into[label] = {**session, "totals": _totals(session["totals"])}
        return
    seen["totals"].add(_totals(session["totals"]))
    seen["first_seen"] = min(seen["first_seen"], session["first_seen"])
    if session["last_seen"] > seen["last_seen"]:  # its latest request names the pricing
        seen.update({k: session[k] for k in ("last_seen", "pricing", "api", "key")})


def merged_snapshot(
    states: Iterable[Mapping[str, Any]], only: Collection[str] | None = None
) -> dict[str, Any]:
    """The JSON of ``GET /tokenlean/stats`` over the statistics books' states (``StatsBook
    .state``): every session, or only those labelled as in ``only``."""
    total, sessions, dropped, unread = Totals(), dict[str, Any](), 0, dict[str, int]()
    cancelled = 0
    for state in states:
        cancelled += state.get("rewrites_cancelled", 0)  # absent from an older worker's file
        for label, session in state["sessions"].items():
            if only is None or label in only:
                _add_session(sessions, label, session)
        if only is None:
            total.add(_totals(state["dropped"]))
            dropped += state["sessions_dropped"]
        for reason, n in state["forwarded_unread"].items():
            unread[reason] = unread.get(reason, 0) + n
    for session in sessions.values():
        total.add(session["totals"])
    return {
        "total": total.to_dict(),
        "sessions": {label: _shown(s) for label, s in sessions.items()},
        "sessions_dropped": dropped,
        "forwarded_unread": unread,
        "rewrites_cancelled": cancelled,
    }


def _shown(session: Mapping[str, Any]) -> dict[str, Any]:
    shown = {k: v for k, v in session.items() if k != "totals"}
    shown["first_seen"], shown["last_seen"] = (
        round(session["first_seen"], 3),
        round(session["last_seen"], 3),
    )
    return {**shown, **session["totals"].to_dict()}


def session_state(totals: Totals, **meta: Any) -> dict[str, Any]:
    """One session's entry in ``StatsBook.state``: its labels' values and its sums as JSON."""
    return {**meta, "totals": asdict(totals)}
