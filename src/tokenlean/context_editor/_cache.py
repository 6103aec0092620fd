"""When clearing a batch pays for the cache re-write it causes (the cache-aware mode).

Cache-aware mode clears whole batches only when that pays for the break, and picks which. Clearing
at the *edit point* (the first newly cleared result) makes the provider re-write its cache from
there on, so this call pays the uncached price for everything after the edit point instead of the
cached price. In exchange, every later call sends ``saved`` fewer tokens, which it would have read
from the cache. With ``P`` the prompt's tokens, ``A`` the tokens before the edit point, ``N`` the
tokens new since the previous call (the previous reply and what follows it), ``S`` the tokens the
batch saves and ``R`` the calls expected after this one, in the pricing's units::

    net = billed(P, cached=P - N) - billed(P - S, cached=A) + R * cached_read * S

Of the choices "the newest ``k`` of the whole batches plain mode would clear" (the edit point is the
oldest of them: a small ``k`` is a cheap re-write near the end of the prompt, a large one saves
more), the one with the largest ``net`` is cleared, and nothing when no ``net`` is positive. So old
results deep in the cached prefix stay when clearing them would cost more than it saves, and the
request may stay above the trigger. ``R`` is ``expected_calls`` minus the calls made so far (this
one included) when given. Otherwise the end of the run is unknown, and a clearing made just before
it costs its whole re-write for nothing, so the editor counts only on the calls the run is very
likely still to make: with ``n`` calls made, the Copernican estimate gives a run lasting at least
``h * n`` more calls a chance of ``1 / (1 + h)``; ``R = floor(horizon * n)``, and the default
``horizon`` of 0.1 asks a clearing to pay back within calls the run makes about nine times in ten
(1.0 would be the median, half the time). On the recorded runs the median lost on a web agent
whose runs end soon after each clearing (see ``benchmarks/context_editor.md``). Pricing is data
(:data:`tokenlean.cost.PRICING`); with ``"none"`` a break costs nothing and
cache-aware mode clears whenever plain mode does.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenlean.context_editor._config import ContextEditorSettings
from tokenlean.context_editor._ledger import RequestLedger
from tokenlean.cost import CachePricing, expected_net_saving

__all__ = ["CacheModel"]


@dataclass(frozen=True, slots=True)
class CacheModel:
    """The quantities of one request that the model needs, read off the ledger once per call."""

    pricing: CachePricing
    prompt: int  # P
    new: int  # N
    remaining: int  # R
    ledger: RequestLedger
    fixed: int  # tokens of the system prompt and tool schemas, before every message

    @classmethod
    def of(cls, ledger: RequestLedger, fixed: int, config: ContextEditorSettings) -> CacheModel:
        so_far = len(ledger.replies)
        last_reply = ledger.replies[-1] if ledger.replies else 0
        expected = config.expected_calls
        if expected is not None:
            remaining = max(0, expected - so_far - 1)
        else:
            remaining = int(config.horizon * so_far)
        prompt = fixed + ledger.total
        new = prompt - (fixed + ledger.before(last_reply))
        return cls(config.pricing, prompt, new, remaining, ledger, fixed)

    def net(self, *, edit_point: int, saved: int) -> float:
        """The expected net saving of clearing ``saved`` tokens from message ``edit_point`` on."""
        prefix = min(self.fixed + self.ledger.before(edit_point), self.prompt - self.new)
        return expected_net_saving(
            self.pricing,
            prompt=self.prompt,
            prefix=prefix,
            new=self.new,
            saved=saved,
            remaining=self.remaining,
        )
