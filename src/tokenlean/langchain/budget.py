"""A token budget per reply for LangChain ``create_agent``, weighted by what tokens really cost.

Each model call's usage (``AIMessage.usage_metadata``, cache reads and writes priced apart; a
local count when a model reports none) is added to a ledger kept in agent state. Once the ledger
reaches the budget, a hint is appended to the conversation once, and every further call of that
reply is made with ``tool_choice="none"`` (with a ``response_format`` pending: offered only the
structured-output tool), so the agent answers instead of exploring.

Cache behaviour: the hint and the optional warning are appended as new messages and stay in
state, so no byte the model was already sent changes. The wrap-up call's ``tool_choice`` is a
request parameter, not message bytes; Anthropic documents that a different ``tool_choice``
invalidates the cached *messages* (tools and system stay cached), so on Anthropic the wrap-up
call writes its messages to the cache again. With a ``response_format`` pending the tools block
itself shrinks to the structured-output tool for the wrap-up call. ``force_no_tools=False`` keeps
requests untouched and relies on the hint alone.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ContextT,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
    ResponseT,
)
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langgraph.types import Command
from typing_extensions import NotRequired, TypedDict

from tokenlean import checks
from tokenlean._failopen import FailOpen, fail_open
from tokenlean.budget import Budget, BudgetWeights, Ledger, Usage, usage_from_metadata
from tokenlean.langchain._adapter import ViewCache
from tokenlean.langchain._helpers import SchemaCache, Update, no_tool_choice, state_hooks
from tokenlean.langchain._memos import TokenMemo
from tokenlean.stats import Tally
from tokenlean.tokens import (
    DEFAULT_COUNTER,
    TokenCounter,
    count_request,
    memoized,
    message_tokens,
)

__all__ = [
    "DEFAULT_HINT_MESSAGE",
    "DEFAULT_WARNING_MESSAGE",
    "NOTICE_ID_PREFIX",
    "STATE_KEY",
    "BudgetRecord",
    "BudgetStats",
    "TokenBudgetMiddleware",
    "TokenBudgetState",
]

logger = logging.getLogger(__name__)

STATE_KEY = "tokenlean_budget"
#: Ids of the messages this middleware appends start with this (they never open a new reply).
NOTICE_ID_PREFIX = "tokenlean-budget-"

DEFAULT_HINT_MESSAGE = (
    "The token budget for this reply is used up. Do not call any more tools. Answer now with "
    "what you have found so far, and say briefly what is left unfinished."
)
DEFAULT_WARNING_MESSAGE = (
    "Most of the token budget for this reply is used. Work towards an answer now and avoid "
    "tool calls that are not needed for it."
)


class BudgetRecord(TypedDict, total=False):
    """The ledger of the current reply as stored in agent state."""

    reply: str  # the human message that opened the reply
    spent: float
    calls: int
    estimated_calls: int
    warned: bool
    hinted: bool


class TokenBudgetState(AgentState[ResponseT]):
    """Agent state with the budget ledger, private to :class:`TokenBudgetMiddleware`."""

    tokenlean_budget: NotRequired[Annotated[BudgetRecord, PrivateStateAttr]]


@dataclass(frozen=True, slots=True)
class BudgetStats:
    """Counters over every run of one middleware instance.

    ``estimated_calls`` are calls whose model reported no usage, counted locally instead.
    """

    calls: int = 0
    estimated_calls: int = 0
    warnings: int = 0
    hints: int = 0
    wrap_up_calls: int = 0
    errors: int = 0


class TokenBudgetMiddleware(AgentMiddleware[TokenBudgetState[ResponseT], ContextT, ResponseT]):
    """Wrap a reply up once its weighted token cost reaches ``token_budget``.

    A *reply* is everything the agent does for one human message: it starts when an invoke
    brings a new human message and survives interrupts (a ``Command(resume=...)`` continues the
    same reply, even from another process, since the ledger lives in the checkpointed state).

    Overrun bound: the budget is checked between calls and a call in flight is never cut off,
    so a reply ends having spent less than ``token_budget`` + the cost of the call that crossed
    it + the cost of the wrap-up call(s) after it (one, when the model obeys ``tool_choice``).

    Args:
        token_budget: Weighted cost a reply may spend before it is asked to wrap up.
        input_token_weight: Cost of an input token not served from or written to the cache.
        output_token_weight: Cost of an output token.
        cache_read_weight: Cost of an input token read from the prompt cache
            (default ``0.1 * input_token_weight``).
        cache_write_weight: Cost of an input token written to the prompt cache
            (default ``1.25 * input_token_weight``).
        model: Price the cache as this model does (:func:`tokenlean.prices.pricing_for`: its
            read and write prices from the genai-prices catalogue, else its provider's
            preset), times ``input_token_weight``, unless the weight is given; the output
            weight stays ``output_token_weight`` (the reference's units: tokens).
        hint_message: Appended (once per reply) when the budget is spent.
        warn_at: Fraction of the budget in (0, 1) at which ``warning_message`` is appended
            once; ``None`` for no warning.
        warning_message: The early warning's text.
        force_no_tools: Make the calls after the budget is spent with no tools to call.
        wrap_up_tool_choice: The ``tool_choice`` those calls use; by default ``"none"``, or
            ``{"type": "none"}`` for ``ChatAnthropic`` (whose ``bind_tools`` reads any other
            string as a tool name).
        token_counter: Counts calls whose model reports no usage (default: the estimate).
    """

    state_schema = TokenBudgetState

    def __init__(
        self,
        *,
        token_budget: float,
        input_token_weight: float = 1.0,
        output_token_weight: float = 1.0,
        cache_read_weight: float | None = None,
        cache_write_weight: float | None = None,
        model: str | None = None,
        hint_message: str = DEFAULT_HINT_MESSAGE,
        warn_at: float | None = None,
        warning_message: str = DEFAULT_WARNING_MESSAGE,
        force_no_tools: bool = True,
        wrap_up_tool_choice: str | dict[str, Any] | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        super().__init__()
        weights = BudgetWeights.of_model(  # the model's cache prices, where no weight is given
            model,
            input_token_weight=input_token_weight,
            output_token_weight=output_token_weight,
            cache_read_weight=cache_read_weight,
            cache_write_weight=cache_write_weight,
        )
        self.budget = Budget(token_budget=token_budget, weights=weights, warn_at=warn_at)
        checks.text(hint_message, "hint_message", blank=False)
        checks.text(warning_message, "warning_message", blank=False)
        self.hint_message = hint_message
        self.warning_message = warning_message
        self.force_no_tools = checks.flag(force_no_tools, "force_no_tools")
        self.wrap_up_tool_choice = checks.tool_choice(wrap_up_tool_choice, "wrap_up_tool_choice")
        if token_counter is not None:
            checks.token_counter(token_counter, "token_counter")
        self.token_counter: TokenCounter = token_counter or DEFAULT_COUNTER
        self._memo = memoized(self.token_counter)
        self._views = ViewCache()
        self._schemas = SchemaCache()
        self._prompts = TokenMemo(self._memo, self._views)
        self._tally = Tally(BudgetStats)

    @property
    def stats(self) -> BudgetStats:
        return self._tally.snapshot()

    def _count(self, **increments: int) -> None:
        self._tally.add(**increments)

    # -- hooks (sync and async share the helpers below) -----------------------------------

    before_agent, abefore_agent = state_hooks("_start_reply")
    before_model, abefore_model = state_hooks("_notice")

    def wrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], ModelResponse[ResponseT]],
    ) -> ModelResponse[ResponseT] | ExtendedModelResponse[ResponseT]:
        request = self._prepare(request)
        return self._settle(request, handler(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], Awaitable[ModelResponse[ResponseT]]],
    ) -> ModelResponse[ResponseT] | ExtendedModelResponse[ResponseT]:
        request = self._prepare(request)
        return self._settle(request, await handler(request))

    # -- helpers ---------------------------------------------------------------------------

    def _start_reply(self, state: Mapping[str, Any]) -> Update:
        """A fresh ledger when this invoke brought a new human message; else keep the old one."""
        with self._fail_open("starting a reply"):
            reply = _reply_key(state.get("messages") or [])
            record = state.get(STATE_KEY)
            if isinstance(record, Mapping) and record.get("reply") == reply:
                return None
            return {STATE_KEY: _record(reply, Ledger())}
        return None

    def _notice(self, state: Mapping[str, Any]) -> Update:
        """Append the hint (budget spent) or the warning, each at most once per reply."""
        with self._fail_open("appending a budget notice"):
            record = state.get(STATE_KEY)
            ledger = Ledger.from_dict(record)
            if self.budget.due_hint(ledger):
                kind, text = "hint", self.hint_message
                ledger = replace(ledger, hinted=True, warned=True)
            elif self.budget.due_warning(ledger):
                kind, text = "warning", self.warning_message
                ledger = replace(ledger, warned=True)
            else:
                return None
            reply = _stored_reply(record)
            notice = HumanMessage(
                content=text, id=f"{NOTICE_ID_PREFIX}{kind}-{reply}-{ledger.calls}"
            )
            self._count(**{f"{kind}s": 1})
            return {"messages": [notice], STATE_KEY: _record(reply, ledger)}
        return None

    def _prepare(self, request: ModelRequest[ContextT]) -> ModelRequest[ContextT]:
        """The request itself, or a wrap-up request when the reply's budget is spent."""
        with self._fail_open("preparing the wrap-up request"):
            ledger = Ledger.from_dict(request.state.get(STATE_KEY))
            if not self.force_no_tools or not self.budget.exhausted(ledger):
                return request
            self._count(wrap_up_calls=1)
            if request.response_format is not None:
                # With tools=[] create_agent binds only the structured-output tool (forcing it
                # for a ToolStrategy), or the provider's native format with nothing to call.
                return request.override(tools=[])
            return request.override(
                tool_choice=no_tool_choice(request.model, self.wrap_up_tool_choice)
            )
        return request

    def _settle(
        self, request: ModelRequest[ContextT], response: ModelResponse[ResponseT]
    ) -> ModelResponse[ResponseT] | ExtendedModelResponse[ResponseT]:
        """Charge the call to the ledger through a state update riding on the response."""
        with self._fail_open("charging a model call"):
            ai = next((m for m in response.result if isinstance(m, AIMessage)), None)
            usage = usage_from_metadata(ai.usage_metadata if ai is not None else None)
            if usage is None:
                usage = self._estimate(request, ai)
            record = request.state.get(STATE_KEY)
            ledger = Ledger.from_dict(record).charge(
                self.budget.cost(usage), estimated=usage.estimated
            )
            self._count(calls=1, estimated_calls=int(usage.estimated))
            update = {STATE_KEY: _record(_stored_reply(record), ledger)}
            return ExtendedModelResponse(model_response=response, command=Command(update=update))
        return response

    def _estimate(self, request: ModelRequest[ContextT], ai: AIMessage | None) -> Usage:
        """Count a call locally (no cache information, so every input token is uncached)."""
        prompt = self._prompts.count(request.messages) + count_request(
            (), self._memo, system=request.system_prompt, tools=self._schemas.schemas(request.tools)
        )
        output = message_tokens(self._views.view(ai), self._memo) if ai else 0
        return Usage(input_tokens=prompt, output_tokens=output, estimated=True)

    def _fail_open(self, what: str) -> FailOpen:
        """A failure while ``what`` is logged and counted; the agent goes on without a budget."""
        return fail_open(
            logger,
            "TokenBudgetMiddleware failed %s; continuing without it",
            what,
            on_error=lambda: self._count(errors=1),
        )


def _reply_key(messages: Sequence[AnyMessage | BaseMessage]) -> str:
    """The id (or position) of the last human message this middleware did not append."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.type == "human" and not str(message.id or "").startswith(NOTICE_ID_PREFIX):
            return str(message.id) if message.id else f"#{index}"
    return "#none"


def _stored_reply(record: Any) -> str:
    reply = record.get("reply") if isinstance(record, Mapping) else None
    return reply if isinstance(reply, str) else "#none"


def _record(reply: str, ledger: Ledger) -> BudgetRecord:
    return BudgetRecord(
        reply=reply,
        spent=ledger.spent,
        calls=ledger.calls,
        estimated_calls=ledger.estimated_calls,
        warned=ledger.warned,
        hinted=ledger.hinted,
    )
