"""When clearing a batch pays for the cache re-write it causes (the cache-aware mode).

Cache-aware mode clears the batches plain mode would, but only when that pays for the break.
Clearing at the *edit point* (the first newly cleared result) makes the provider re-write its cache
from there on, so this call pays the uncached price for everything after the edit point instead of
the cached price. In exchange, every later call sends ``saved`` fewer tokens, which it would have
read from the cache. With ``P`` the prompt's tokens, ``A`` the tokens before the edit point, ``N``
the tokens new since the previous call (the previous reply and what follows it), ``S`` the tokens
the batch saves and ``R`` the calls expected after this one, in the pricing's units::

    net = billed(P, cached=P - N) - billed(P - S, cached=A) + R * cached_read * S

and the batches are cleared only when ``net > 0``. ``R`` is ``expected_calls`` minus the calls made
so far (this one included) when given; otherwise the run is assumed to last as long again as it has
so far (an agent that has made ``n`` calls is, at the median, halfway through), so ``R`` is the
number of calls so far. Pricing is data (:data:`tokenlean.cost.PRICING`); with ``"none"`` a break
costs nothing and cache-aware mode clears whenever plain mode does.
"""

from __future__ import annotations

from tokenlean.context_editor.config import ContextEditorConfig, RequestView
from tokenlean.cost import CachePricing
from tokenlean.tokens import TokenCounter, count_request, message_tokens


def net_saving(
    current: RequestView,
    *,
    edit_point: int,
    saved: int,
    config: ContextEditorConfig,
    counter: TokenCounter,
) -> float:
    """The model's net saving for clearing ``saved`` tokens from message ``edit_point`` on."""
    messages = current.messages
    sizes = [message_tokens(m, counter) for m in messages]
    fixed = count_request((), counter, system=current.system, tools=current.tools)
    prompt = fixed + sum(sizes)
    last_reply = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=0)
    new = sum(sizes[last_reply:])
    prefix = min(fixed + sum(sizes[:edit_point]), prompt - new)
    so_far = sum(1 for m in messages if m.role == "assistant")
    expected = config.expected_calls
    remaining = max(0, expected - so_far - 1) if expected is not None else so_far
    return expected_net_saving(
        config.pricing, prompt=prompt, prefix=prefix, new=new, saved=saved, remaining=remaining
    )


def expected_net_saving(
    pricing: CachePricing, *, prompt: int, prefix: int, new: int, saved: int, remaining: int
) -> float:
    """What clearing ``saved`` tokens at an edit point after ``prefix`` tokens is expected to save.

    Positive when the saving over ``remaining`` later calls outweighs re-writing the cache after
    the edit point on this call (see the module docstring for the model).
    """
    without = pricing.billed(prompt, max(0, prompt - new))
    with_edit = pricing.billed(prompt - saved, min(prefix, prompt - saved))
    return without - with_edit + remaining * pricing.cached_read * saved
