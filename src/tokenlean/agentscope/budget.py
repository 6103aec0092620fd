"""A weighted token budget per AgentScope reply: AgentScope's own, and cache-aware on request.

:class:`ReplyBudgetControlMiddleware` takes the constructor of AgentScope's middleware of the
same name (``token_budget``, ``input_token_weight=1``, ``output_token_weight=1``,
``hint_message``) and, given only those, counts and wraps up exactly as it does: each
``ModelCallEndEvent`` costs ``input_token_weight * input_tokens + output_token_weight *
output_tokens`` (the event's fields as the model reported them, cached tokens neither added nor
discounted); the cost is summed per reply (``on_reply`` sees each event; a ``ReplyStartEvent``
starts a new reply and drops the last one's); once the sum reaches the budget (``>=``), every
later reasoning step of the reply is made with ``tool_choice="none"``, or, while a structured
output is owed, with only the structured-output tool offered; the call that crosses the budget
is never cut off. The state lives in ``agent.state.middle_context`` under the middleware's key,
so a reply paused for a human and resumed (even from a saved state) goes on with what it has
spent. ``tests/agentscope/test_budget_parity.py`` runs both classes side by side.

What differs from AgentScope's class:

- the hint is appended once per reply (AgentScope's appends it again before every step after
  the budget is spent, so each wrap-up call re-sends one more copy of it); the counting and the
  ``tool_choice`` of every call are the same;
- a failure of its own is logged and the step goes on (AgentScope's raises, e.g. on a model call
  that reports no usage); ``token_budget`` must be above 0 and the weights at least 0.

Pricing the cache is opt-in: ``price_cache=True``. Then a token read from the prompt cache
(``cache_input_tokens``) costs ``cache_read_weight`` (default a tenth of
``input_token_weight``), a token written to it (``cache_creation_input_tokens``)
``cache_write_weight`` (default 1.25 times), and only the rest of the prompt the input weight,
as providers bill them. Models report differently: AgentScope's Anthropic model gives
``input_tokens`` *without* the cached tokens, its OpenAI, Gemini, DashScope and other models
*with* them; ``usage_style="auto"`` tells by the agent's model, ``"anthropic"`` or ``"openai"``
says it for a model of your own. So, against the default count, pricing the cache makes a reply
last longer on OpenAI-style models (a cached token costs a tenth, not a whole input token) and
end sooner on Anthropic (cached tokens, which the default count never sees, are charged).

The core's :class:`~tokenlean.budget.Budget` and :class:`~tokenlean.budget.Ledger` do the
arithmetic, as for the LangChain :class:`~tokenlean.langchain.TokenBudgetMiddleware`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from agentscope.event import ModelCallEndEvent, ReplyStartEvent
from agentscope.middleware import MiddlewareBase

from tokenlean import checks
from tokenlean._failopen import fail_open
from tokenlean.agentscope._hooks import Events, Handler, Kwargs
from tokenlean.agentscope._wrapup import (
    STRUCTURED_OUTPUT_TOOL,
    append_hint,
    structured_output_pending,
    wrap_up_choice,
)
from tokenlean.budget import Budget, BudgetWeights, Ledger, Usage
from tokenlean.transcript import INJECTED_ID_PREFIX

if TYPE_CHECKING:
    from agentscope.agent import Agent

__all__ = [
    "DEFAULT_HINT_MESSAGE",
    "STRUCTURED_OUTPUT_HINT_MESSAGE",
    "USAGE_STYLES",
    "ReplyBudgetControlMiddleware",
    "UsageStyle",
]

logger = logging.getLogger("tokenlean.agentscope")

UsageStyle = Literal["auto", "anthropic", "openai"]
USAGE_STYLES: tuple[UsageStyle, ...] = ("auto", "anthropic", "openai")
#: Ids of the hints this middleware appends start with this.
ID_PREFIX = f"{INJECTED_ID_PREFIX}budget-"

DEFAULT_HINT_MESSAGE = (
    "<system-reminder>You have used up the token budget for this reply. Do not call any more "
    "tools: answer now with what you have found, and say briefly what is left unfinished."
    "</system-reminder>"
)
STRUCTURED_OUTPUT_HINT_MESSAGE = (
    "<system-reminder>You have used up the token budget for this reply. Call the '{tool_name}' "
    "tool now with your final structured output, and no other tool.</system-reminder>"
)


class ReplyBudgetControlMiddleware(MiddlewareBase):
    """Wrap a reply up once its weighted token cost reaches ``token_budget`` (module docstring).

    Args:
        token_budget: weighted cost a reply may spend before it is asked to wrap up.
        input_token_weight: cost of an input token neither read from nor written to the cache.
        output_token_weight: cost of an output token.
        hint_message: appended once per reply when the budget is spent (a reply that owes a
            structured output is told to call that tool instead).
        price_cache: price cached tokens apart (off: count ``input_tokens`` as AgentScope's
            middleware does). The three arguments below need it.
        cache_read_weight: cost of a token read from the prompt cache
            (default ``0.1 * input_token_weight``).
        cache_write_weight: cost of a token written to the prompt cache
            (default ``1.25 * input_token_weight``).
        usage_style: whether the model's ``input_tokens`` leave the cached tokens out
            (``"anthropic"``) or hold them (``"openai"``); ``"auto"`` tells by the model.
        model: price the cache as this model does (:func:`tokenlean.prices.pricing_for`: its
            read and write prices from the genai-prices catalogue, else its provider's preset),
            times ``input_token_weight``, unless a weight is given; needs ``price_cache``. The
            output weight stays ``output_token_weight`` (the reference's units: tokens).

    Overrun bound: the budget is checked between calls and a call in flight is never cut off,
    so a reply spends at most ``token_budget`` plus the call that crossed it plus its wrap-up.
    """

    def __init__(
        self,
        token_budget: float,
        input_token_weight: float = 1,
        output_token_weight: float = 1,
        hint_message: str = DEFAULT_HINT_MESSAGE,
        *,
        price_cache: bool = False,
        cache_read_weight: float | None = None,
        cache_write_weight: float | None = None,
        usage_style: UsageStyle = "auto",
        model: str | None = None,
    ) -> None:
        checks.flag(price_cache, "price_cache")
        if not price_cache:
            _refuse_cache_options(cache_read_weight, cache_write_weight, usage_style, model)
        weights = BudgetWeights.of_model(  # the model's cache prices, where no weight is given
            model,
            input_token_weight=input_token_weight,
            output_token_weight=output_token_weight,
            cache_read_weight=cache_read_weight,
            cache_write_weight=cache_write_weight,
        )
        self.budget = Budget(token_budget=token_budget, weights=weights)
        checks.text(hint_message, "hint_message", blank=False)
        checks.one_of(usage_style, "usage_style", USAGE_STYLES)
        self.token_budget = token_budget
        self.input_token_weight = input_token_weight
        self.output_token_weight = output_token_weight
        self.hint_message = hint_message
        self.price_cache = price_cache
        self.usage_style: UsageStyle = usage_style

    async def on_reply(self, agent: Agent, input_kwargs: Kwargs, next_handler: Handler) -> Events:
        key = await self.get_middleware_key()
        async for event in next_handler(**input_kwargs):
            with fail_open(logger, "ReplyBudgetControlMiddleware could not count a model call"):
                self._count(agent, key, event)
            yield event

    async def on_reasoning(
        self, agent: Agent, input_kwargs: Kwargs, next_handler: Handler
    ) -> Events:
        with fail_open(logger, "ReplyBudgetControlMiddleware failed; the step goes on as is"):
            key = await self.get_middleware_key()
            self._enforce(agent, key, input_kwargs)
        async for event in next_handler(**input_kwargs):
            yield event

    async def spent(self, agent: Agent) -> Ledger:
        """What the agent's current reply has spent (an empty ledger before its first call)."""
        key = await self.get_middleware_key()
        return _ledger(agent.state.middle_context.get(key), agent)

    # -- helpers ---------------------------------------------------------------------------

    def _count(self, agent: Agent, key: str, event: object) -> None:
        state = agent.state.middle_context
        if isinstance(event, ReplyStartEvent):
            # Not cleared on ReplyEndEvent: an outer middleware may swallow it, and the same
            # reply then goes on spending.
            state[key] = {event.reply_id: Ledger().to_dict()}
        elif isinstance(event, ModelCallEndEvent):
            record = state.get(key)
            ledger = Ledger.from_dict(
                record.get(event.reply_id) if isinstance(record, Mapping) else None
            )
            ledger = ledger.charge(self.budget.cost(self._usage(agent, event)))
            state[key] = {event.reply_id: ledger.to_dict()}

    def _usage(self, agent: Agent, event: ModelCallEndEvent) -> Usage:
        prompt, output = event.input_tokens or 0, event.output_tokens or 0
        if not self.price_cache:
            # AgentScope's count: ``input_tokens`` as reported, whatever the cache served.
            return Usage(prompt, output)
        read, write = event.cache_input_tokens or 0, event.cache_creation_input_tokens or 0
        if self._excludes_cache(agent):
            prompt += read + write
        return Usage(prompt, output, cache_read=read, cache_write=write)

    def _excludes_cache(self, agent: Agent) -> bool:
        if self.usage_style != "auto":
            return self.usage_style == "anthropic"
        from agentscope.model import AnthropicChatModel

        return isinstance(getattr(agent, "model", None), AnthropicChatModel)

    def _enforce(self, agent: Agent, key: str, input_kwargs: dict[str, Any]) -> None:
        state = agent.state.middle_context
        ledger = _ledger(state.get(key), agent)
        if not self.budget.exhausted(ledger):
            return
        if not ledger.hinted:
            append_hint(agent, self._hint(agent), f"{ID_PREFIX}{agent.state.reply_id}")
            state[key] = {agent.state.reply_id: replace(ledger, hinted=True).to_dict()}
        input_kwargs["tool_choice"] = wrap_up_choice(agent, input_kwargs.get("tool_choice"))

    def _hint(self, agent: Agent) -> str:
        if structured_output_pending(agent):
            return STRUCTURED_OUTPUT_HINT_MESSAGE.format(tool_name=STRUCTURED_OUTPUT_TOOL)
        return self.hint_message


def _refuse_cache_options(
    read: float | None, write: float | None, style: UsageStyle, model: str | None
) -> None:
    """A cache option given without ``price_cache=True`` would be silently ignored: refuse it."""
    given = [
        name
        for name, value, unset in (
            ("cache_read_weight", read, None),
            ("cache_write_weight", write, None),
            ("usage_style", style, "auto"),
            ("model", model, None),
        )
        if value != unset
    ]
    if given:
        raise ValueError(
            f"{given[0]} prices the cache, which is off by default: add price_cache=True"
        )


def _ledger(record: object, agent: Agent) -> Ledger:
    """The current reply's ledger in ``record`` (a stored ledger of another reply is stale)."""
    if not isinstance(record, Mapping):
        return Ledger()
    return Ledger.from_dict(record.get(agent.state.reply_id))
