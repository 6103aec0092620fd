"""A/B arms on live traffic: which arm a session is in, and what its newest turn holds.

Each session (its label, :func:`tokenlean.proxy._sessions.session_key`, an HMAC of the client's
session id keyed by the proxy's salt) is assigned by a hash of that label: to ``control`` with
probability ``share``, else to ``tokenlean``. The label depends only on the request and the
salt, so every request of a session lands in the same arm, in every worker and on every machine
that shares the salt, with no state to share. A control request is forwarded as the client sent
it, byte for byte: the rewrite is simply not run for it.

What a request tells of the agent's quality is read from its newest turn only (the history is
re-sent on every request, so counting all of it would count each result again and again): the
tool results that answer the previous reply, how many of them report an error (Anthropic's
``is_error``; Gemini's ``functionResponse.response.error``; OpenAI's tool messages carry no such
flag and count none), and the calls of ``read_original`` (the tool that fetches a shortened
result's original, under any MCP prefix) in that previous reply.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tokenlean.proxy._rewrite import RewriteOutcome, Rewriter
from tokenlean.proxy._sessions import session_key
from tokenlean.raw import Api, list_key

__all__ = ["ARMS", "Arm", "NewestTurn", "arm_of", "arm_rewriter", "newest_turn"]

Arm = Literal["control", "tokenlean"]
ARMS: tuple[Arm, Arm] = ("control", "tokenlean")
_READ_ORIGINAL = "read_original"


def arm_of(label: str, share: float) -> Arm:
    """The arm of the session labelled ``label`` when ``share`` of sessions are controls."""
    digest = hashlib.sha256(b"tokenlean-ab\n" + label.encode()).digest()
    point = int.from_bytes(digest[:8], "big") / 2**64  # uniform on [0, 1)
    return "control" if point < share else "tokenlean"


def arm_rewriter(
    rewriter: Rewriter, headers: Mapping[str, str], *, share: float, salt: bytes
) -> Rewriter:
    """``rewriter`` for one request (sent with ``headers``): it runs only in the tokenlean arm;
    a control session's body is left as it came (None: nothing changed)."""

    def rewrite(api: Api, body: Mapping[str, Any]) -> RewriteOutcome | None:
        label, _ = session_key(api, headers, body, salt=salt)
        return rewriter(api, body) if arm_of(label, share) == "tokenlean" else None

    return rewrite


@dataclass(frozen=True, slots=True)
class NewestTurn:
    """What the newest turn of a request holds."""

    tool_results: int = 0
    tool_errors: int = 0
    read_original_calls: int = 0


def newest_turn(api: Api, body: Mapping[str, Any]) -> NewestTurn:
    """The tool results after the last reply, and the ``read_original`` calls in that reply."""
    items = body.get(list_key(api))
    if not isinstance(items, list):
        return NewestTurn()
    items = [i for i in items if isinstance(i, Mapping)]
    if api == "openai_responses":
        return _responses(items)
    replies = [n for n, i in enumerate(items) if i.get("role") in ("assistant", "model")]
    if not replies:
        return NewestTurn()
    reply, after = items[replies[-1]], items[replies[-1] + 1 :]
    if api == "anthropic":
        return _anthropic(reply, after)
    if api == "gemini":
        return _gemini(reply, after)
    calls = [c.get("function", {}).get("name") for c in _list(reply.get("tool_calls"))]
    results = sum(1 for i in after if i.get("role") == "tool")
    return NewestTurn(results, 0, _reads(calls))


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _reads(names: Sequence[Any]) -> int:
    return sum(1 for n in names if isinstance(n, str) and n.endswith(_READ_ORIGINAL))


def _anthropic(reply: Mapping[str, Any], after: Sequence[Mapping[str, Any]]) -> NewestTurn:
    calls = [b.get("name") for b in _list(reply.get("content")) if b.get("type") == "tool_use"]
    results = [b for i in after for b in _list(i.get("content")) if b.get("type") == "tool_result"]
    errors = sum(1 for b in results if b.get("is_error") is True)
    return NewestTurn(len(results), errors, _reads(calls))


def _gemini(reply: Mapping[str, Any], after: Sequence[Mapping[str, Any]]) -> NewestTurn:
    calls = [p["functionCall"].get("name") for p in _list(reply.get("parts"))
             if isinstance(p.get("functionCall"), Mapping)]  # fmt: skip
    answers = [p["functionResponse"] for i in after for p in _list(i.get("parts"))
               if isinstance(p.get("functionResponse"), Mapping)]  # fmt: skip
    errors = sum(1 for a in answers if isinstance(a.get("response"), Mapping)
                 and "error" in a["response"])  # fmt: skip
    return NewestTurn(len(answers), errors, _reads(calls))


def _responses(items: Sequence[Mapping[str, Any]]) -> NewestTurn:
    """Responses input is flat: the newest outputs trail the calls of the reply they answer."""
    end = len(items)
    while end and items[end - 1].get("type") == "function_call_output":
        end -= 1
    start = end
    while start and items[start - 1].get("type") == "function_call":
        start -= 1
    calls = [i.get("name") for i in items[start:end]]
    return NewestTurn(len(items) - end, 0, _reads(calls))
