"""Which old tool results to clear from a request, and when clearing pays for itself.

The framework-free core of :class:`tokenlean.langchain.ContextEditorMiddleware`. Given the request
as it is about to be sent (a neutral :class:`RequestView`) and the results cleared on earlier
calls, :func:`plan_clearing` returns the full cleared set for this call. The set only grows, and
only by whole batches of the oldest eligible results, so a request that was cleared once keeps the
same bytes until the next batch: each batch costs at most one prompt-cache break.

Plain mode clears just enough whole batches to bring the request back under the trigger.

Cache-aware mode weighs the same batches against what the break costs. Clearing at the *edit
point* (the first newly cleared result) makes the provider re-write its cache from there on, so
this call pays the uncached price for everything after the edit point instead of the cached price.
In exchange, every later call sends ``saved`` fewer tokens, which it would have read from the
cache. With ``P`` the prompt's tokens, ``A`` the tokens before the edit point, ``N`` the tokens
new since the previous call (the previous reply and what follows it), ``S`` the tokens the batch
saves and ``R`` the calls expected after this one, in the pricing's units::

    net = billed(P, cached=P - N) - billed(P - S, cached=A) + R * cached_read * S

and the batches are cleared only when ``net > 0``. ``R`` is ``expected_calls`` minus the calls so
far when given; otherwise the run is assumed to last as long again as it has so far (an agent that
has made ``n`` calls is, at the median, halfway through), so ``R`` is the number of calls so far.
Pricing is data (:data:`tokenlean.cost.PRICING`); with ``"none"`` a break costs nothing and
cache-aware mode clears whenever plain mode does.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tokenlean.cost import ANTHROPIC, PRICING, CachePricing
from tokenlean.tokens import EstimateCounter, TokenCounter, count_request, message_tokens
from tokenlean.transcript import Message, ToolCall

Mode = Literal["plain", "cache_aware"]
MODES: tuple[Mode, ...] = ("plain", "cache_aware")
DEFAULT_RETRIEVAL_TOOL = "retrieve_tool_output"
#: A custom placeholder: the cleared result's tool name and length in characters -> text.
PlaceholderFn = Callable[[str, int], str]


@dataclass(frozen=True, slots=True)
class RequestView:
    """A request as the model would receive it: system prompt, tool schemas, messages."""

    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[Mapping[str, Any], ...] = ()


#: Estimates a whole request's tokens (the trigger is judged on this).
TokenEstimator = Callable[[RequestView], int]


def request_estimator(counter: TokenCounter | None = None) -> TokenEstimator:
    """An estimator counting system prompt, tool schemas and messages with ``counter``."""
    used = counter if counter is not None else EstimateCounter()

    def estimate(request: RequestView) -> int:
        return count_request(request.messages, used, system=request.system, tools=request.tools)

    return estimate


class MemoCounter:
    """Wraps a counter with a bounded, thread-safe memo: a long run re-counts the same texts."""

    def __init__(self, counter: TokenCounter, *, max_entries: int = 4096) -> None:
        self.counter = counter
        self._max = max_entries
        self._memo: dict[str, int] = {}
        self._lock = threading.Lock()

    def count(self, text: str) -> int:
        if len(text) < 64:  # cheaper to count than to remember
            return self.counter.count(text)
        with self._lock:
            hit = self._memo.get(text)
        if hit is not None:
            return hit
        value = self.counter.count(text)
        with self._lock:
            if len(self._memo) >= self._max:
                self._memo.clear()
            self._memo[text] = value
        return value


@dataclass(frozen=True, slots=True)
class Clearing:
    """How one cleared result is sent from now on (kept so later calls send identical bytes)."""

    placeholder: str
    clear_inputs: bool = False


@dataclass(frozen=True, slots=True)
class ClearedToolResult:
    """One result cleared by an edit."""

    tool: str
    length: int  # characters
    tool_call_id: str
    tokens_saved: int


@dataclass(frozen=True, slots=True)
class ContextEdit:
    """What one edit did: the results it cleared and the request's tokens before and after.

    ``tokens_before`` is the request as it would have been sent without this edit (earlier
    clearing applied); ``net_saving`` is the cache-aware model's expected saving (None in plain).
    """

    cleared: tuple[ClearedToolResult, ...]
    batches: int
    tokens_before: int
    tokens_after: int
    total_cleared: int
    net_saving: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextEditorConfig:
    """Options of the context editor; every default lives here."""

    trigger_tokens: int = 30_000
    keep: int = 3
    batch: int = 5
    exclude_tools: frozenset[str] = frozenset()
    clear_tool_inputs: bool = False
    placeholder: str | PlaceholderFn | None = None
    min_saved_tokens: int = 50
    mode: Mode = "plain"
    pricing: CachePricing = ANTHROPIC
    expected_calls: int | None = None
    retrieval_tool: str | None = DEFAULT_RETRIEVAL_TOOL

    def __post_init__(self) -> None:
        for name in ("trigger_tokens", "keep", "min_saved_tokens"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ValueError(f"{name} must be a non-negative int, got {getattr(self, name)!r}")
        if not isinstance(self.batch, int) or self.batch < 1:
            raise ValueError(f"batch must be an int >= 1, got {self.batch!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.expected_calls is not None and self.expected_calls < 1:
            raise ValueError(f"expected_calls must be >= 1 or None, got {self.expected_calls!r}")
        if self.placeholder is not None and not (
            isinstance(self.placeholder, str) or callable(self.placeholder)
        ):
            raise ValueError("placeholder must be a string or a callable (tool, length) -> str")
        object.__setattr__(self, "exclude_tools", _names(self.exclude_tools))
        object.__setattr__(self, "pricing", _pricing(self.pricing))

    def placeholder_for(self, tool: str, length: int, call_id: str, retrieval: bool) -> str:
        if isinstance(self.placeholder, str):
            return self.placeholder
        if self.placeholder is not None:
            return str(self.placeholder(tool, length))
        return default_placeholder(
            tool, length, call_id, self.retrieval_tool if retrieval else None
        )


def _names(value: object) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(f"exclude_tools must be a collection of tool names, got {value!r}")
    return frozenset(str(name) for name in value)


def _pricing(value: object) -> CachePricing:
    if isinstance(value, CachePricing):
        return value
    if isinstance(value, str) and value in PRICING:
        return PRICING[value]
    raise ValueError(f"pricing must be a CachePricing or one of {sorted(PRICING)}, got {value!r}")


def default_placeholder(tool: str, length: int, call_id: str, retrieval_tool: str | None) -> str:
    """Names the tool and says how to get the result back."""
    if retrieval_tool:
        how = f'call `{retrieval_tool}` with tool_call_id "{call_id}" to read it again'
    else:
        how = "call the tool again if you need it"
    return f"[`{tool}` result cleared to save context ({length:,} characters); {how}.]"


# ---------------------------------------------------------------------------------------------
# Applying a cleared set to the neutral view


def apply_clearing(messages: Sequence[Message], cleared: Mapping[str, Clearing]) -> list[Message]:
    """The messages with cleared results replaced (and their calls' arguments emptied)."""
    out: list[Message] = []
    for message in messages:
        call_id = message.tool_call_id or ""
        if message.role == "tool" and call_id in cleared:
            message = replace(message, content=cleared[call_id].placeholder)
        elif message.tool_calls and any(_clears_input(c, cleared) for c in message.tool_calls):
            calls = tuple(
                ToolCall(c.id, c.name, {}) if _clears_input(c, cleared) else c
                for c in message.tool_calls
            )
            message = replace(message, tool_calls=calls)
        out.append(message)
    return out


def _clears_input(call: ToolCall, cleared: Mapping[str, Clearing]) -> bool:
    entry = cleared.get(call.id)
    return entry is not None and entry.clear_inputs


# ---------------------------------------------------------------------------------------------
# Planning


@dataclass(frozen=True, slots=True)
class _Result:
    index: int
    call: ToolCall
    length: int
    saved: int
    clearing: Clearing


@dataclass(frozen=True, slots=True)
class Plan:
    """The cleared set for this call (earlier entries first) and the edit that grew it, if any."""

    cleared: Mapping[str, Clearing] = field(default_factory=dict)
    edit: ContextEdit | None = None


def _calls(messages: Sequence[Message]) -> dict[str, ToolCall]:
    """Tool calls by id, leaving out ids that are missing or used twice (ambiguous pairing)."""
    seen: dict[str, ToolCall] = {}
    twice: set[str] = set()
    for message in messages:
        for call in message.tool_calls:
            if call.id in seen:
                twice.add(call.id)
            seen[call.id] = call
    return {key: call for key, call in seen.items() if key and key not in twice}


def _results(messages: Sequence[Message]) -> list[int]:
    """Indices of tool results whose call id is used by exactly one result."""
    uses = Counter(m.tool_call_id for m in messages if m.role == "tool")
    return [
        i
        for i, m in enumerate(messages)
        if m.role == "tool" and m.tool_call_id and uses[m.tool_call_id] == 1
    ]


def plan_clearing(
    request: RequestView,
    *,
    config: ContextEditorConfig,
    previous: Mapping[str, Clearing],
    skip: frozenset[str] = frozenset(),
    estimate: TokenEstimator | None = None,
    counter: TokenCounter | None = None,
) -> Plan:
    """The cleared set for ``request``: every earlier clearing, plus new whole batches if due.

    ``skip`` holds tool call ids cleared by someone else (never cleared twice); ``counter``
    sizes single results (for ``min_saved_tokens`` and the cache model), ``estimate`` the request.
    """
    estimate = estimate or request_estimator(counter)
    counter = counter or EstimateCounter()
    messages = request.messages
    tool_results = [i for i, m in enumerate(messages) if m.role == "tool"]
    present = {m.tool_call_id for m in messages if m.role == "tool"}
    cleared = {key: value for key, value in previous.items() if key in present}
    current = replace(request, messages=tuple(apply_clearing(messages, cleared)))
    before = estimate(current)
    if before <= config.trigger_tokens:
        return Plan(cleared)
    kept = set(tool_results[len(tool_results) - config.keep :]) if config.keep else set()
    retrieval = config.retrieval_tool is not None and config.retrieval_tool in _tool_names(request)
    calls = _calls(messages)
    candidates = [
        result
        for index in _results(messages)
        if index not in kept and messages[index].tool_call_id not in cleared
        if (result := _candidate(messages[index], index, calls, skip, config, counter, retrieval))
    ]
    return _grow(current, cleared, candidates, before, config, estimate, counter)


def _tool_names(request: RequestView) -> set[str]:
    names: set[str] = set()
    for tool in request.tools:
        function = tool.get("function")
        name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
        if isinstance(name, str):
            names.add(name)
    return names


def _candidate(
    message: Message,
    index: int,
    calls: Mapping[str, ToolCall],
    skip: frozenset[str],
    config: ContextEditorConfig,
    counter: TokenCounter,
    retrieval: bool,
) -> _Result | None:
    call = calls.get(message.tool_call_id or "")
    if call is None or call.id in skip or not message.is_text_only:
        return None
    tool = call.name or message.name or "tool"
    if {tool, message.name or tool} & config.exclude_tools:
        return None
    length = len(message.text)
    placeholder = config.placeholder_for(tool, length, call.id, retrieval)
    saved = message_tokens(message, counter) - message_tokens(
        replace(message, content=placeholder), counter
    )
    if config.clear_tool_inputs and call.args:
        saved += counter.count(json.dumps(call.args, ensure_ascii=False, default=str)) - 1
    if saved < max(config.min_saved_tokens, 1):
        return None
    return _Result(index, call, length, saved, Clearing(placeholder, config.clear_tool_inputs))


def _grow(
    current: RequestView,
    cleared: dict[str, Clearing],
    candidates: Sequence[_Result],
    before: int,
    config: ContextEditorConfig,
    estimate: TokenEstimator,
    counter: TokenCounter,
) -> Plan:
    """Clear every whole batch of candidates: all old results but the newest, oldest first."""
    usable = len(candidates) - len(candidates) % config.batch
    chosen = list(candidates[:usable])
    if not chosen:
        return Plan(cleared)
    grown = {**cleared, **{r.call.id: r.clearing for r in chosen}}
    after = estimate(replace(current, messages=tuple(apply_clearing(current.messages, grown))))
    net = None
    if config.mode == "cache_aware":
        net = _net_saving(current, chosen, config, counter)
        if net <= 0:
            return Plan(cleared)
    report = tuple(ClearedToolResult(r.call.name, r.length, r.call.id, r.saved) for r in chosen)
    edit = ContextEdit(report, len(chosen) // config.batch, before, after, len(grown), net)
    return Plan(grown, edit)


def _net_saving(
    current: RequestView,
    chosen: Sequence[_Result],
    config: ContextEditorConfig,
    counter: TokenCounter,
) -> float:
    """The cache-aware model (see the module docstring), in uncached-token units."""
    messages = current.messages
    sizes = [message_tokens(m, counter) for m in messages]
    fixed = count_request((), counter, system=current.system, tools=current.tools)
    prompt = fixed + sum(sizes)
    last_reply = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=0)
    new = sum(sizes[last_reply:])
    edit_point = min(r.index for r in chosen)
    prefix = min(fixed + sum(sizes[:edit_point]), prompt - new)
    saved = sum(r.saved for r in chosen)
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
