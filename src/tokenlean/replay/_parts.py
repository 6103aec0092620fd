"""Where the money went: a bill split over the parts of the prompt that ran it up.

A part is what a block of the prompt holds: the tool schemas, the system prompt, the user's
messages, the agent's own turns (its text and tool-call arguments), or the results of one tool.
A call's billed input is split over its blocks by position: the tokens the provider reads from
its cache (the start of the prompt, as many as :meth:`~tokenlean.cost.CachePricing.billed` bills
as read) at the read price, the rest at the write (uncached) price, so the parts of a run add up
to its billed input under the same pricing. The output the agent wrote is a part of its own, so
the parts add up to the whole bill.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tokenlean.cost import CachePricing
from tokenlean.transcript import Message

__all__ = [
    "FIXED",
    "OUTPUT",
    "OWN",
    "SCHEMAS",
    "SYSTEM",
    "USER",
    "CallParts",
    "billed_parts",
    "part_of",
    "split_billed",
]

#: Parts that are not tool output; every other input part is ``results of `name```.
SCHEMAS, SYSTEM, USER, OWN = "tool schemas", "system prompt", "user messages", "the agent's turns"
FIXED = (SCHEMAS, SYSTEM, USER, OWN)
#: The part the whole bill adds: what the agent wrote, at the output price.
OUTPUT = "output (the agent's replies)"


def part_of(message: Message, names: Mapping[str, str]) -> str:
    """The part ``message`` belongs to; a result is named after its call's tool (``names``:
    call id -> tool name)."""
    if message.role == "tool":
        name = names.get(message.tool_call_id or "") or message.name or "?"
        return f"results of `{name}`"
    return {"system": SYSTEM, "user": USER, "assistant": OWN}.get(message.role, USER)


@dataclass(frozen=True, slots=True)
class CallParts:
    """One call's prompt as blocks: each block's tokens and part, the tokens of the prefix the
    previous call sent the same (what a cache can serve), and the tokens of the reply."""

    tokens: tuple[int, ...]
    parts: tuple[str, ...]
    cached: int
    output: int = 0


def split_billed(pricing: CachePricing, tokens: Sequence[int], cached: int) -> list[float]:
    """Each block's share of ``pricing.billed(sum(tokens), cached)``, by position: the first
    tokens the provider reads from its cache at the read price, the others at the write price
    (a prompt too short to cache: every token at the plain price)."""
    prompt = sum(tokens)
    priced = pricing.for_prompt(prompt)
    if prompt < pricing.min_cached:  # mirrors CachePricing.billed: nothing is written
        plain = priced.uncached / max(pricing.uncached, 1.0)
        return [plain * t for t in tokens]
    hit = priced.billable_cached(min(cached, prompt))
    out, start = [], 0
    for count in tokens:
        read = max(0, min(count, hit - start))
        out.append(priced.cached_read * read + priced.uncached * (count - read))
        start += count
    return out


def billed_parts(calls: Iterable[CallParts], pricing: CachePricing) -> dict[str, float]:
    """Each part's bill over ``calls`` under ``pricing``, in its units (``pricing.dollars``
    turns them into dollars), the output included as :data:`OUTPUT`."""
    out: defaultdict[str, float] = defaultdict(float)
    for call in calls:
        for part, billed in zip(
            call.parts, split_billed(pricing, call.tokens, call.cached), strict=True
        ):
            out[part] += billed
        if call.output:
            out[OUTPUT] += pricing.for_prompt(sum(call.tokens)).output * call.output
    return dict(out)
