"""The context editor's options, the request view it reads, and what it reports."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, get_args

from tokenlean import checks
from tokenlean.cost import ANTHROPIC, CachePricing, resolve_pricing
from tokenlean.store import RETRIEVAL_TOOL
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter, count_request
from tokenlean.transcript import Message

__all__ = [
    "DEFAULT_RETRIEVAL_TOOL",
    "MODES",
    "SAFETY_NET_SHARE",
    "ClearedRecord",
    "ClearedToolResult",
    "Clearing",
    "ContextEdit",
    "ContextEditorSettings",
    "Mode",
    "PlaceholderFn",
    "RequestView",
    "TokenEstimator",
    "default_placeholder",
    "request_estimator",
]

Mode = Literal["plain", "cache_aware"]
MODES: tuple[Mode, ...] = get_args(Mode)
DEFAULT_RETRIEVAL_TOOL = RETRIEVAL_TOOL
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
    used = counter if counter is not None else DEFAULT_COUNTER

    def estimate(request: RequestView) -> int:
        return count_request(request.messages, used, system=request.system, tools=request.tools)

    return estimate


class ClearedRecord(TypedDict):
    """A :class:`Clearing` as agent state keeps it."""

    placeholder: str
    clear_inputs: bool


@dataclass(frozen=True, slots=True)
class Clearing:
    """How one cleared result is sent from now on (kept so later calls send identical bytes)."""

    placeholder: str
    clear_inputs: bool = False

    def to_record(self) -> ClearedRecord:
        """The form agent state keeps it in (plain JSON, so any checkpointer persists it)."""
        return {"placeholder": self.placeholder, "clear_inputs": self.clear_inputs}

    @staticmethod
    def read_all(raw: object) -> dict[str, Clearing]:
        """A cleared set read back from state (tool call id -> record); what is malformed is
        left out."""
        out: dict[str, Clearing] = {}
        for key, value in raw.items() if isinstance(raw, Mapping) else ():
            if isinstance(value, Mapping) and isinstance(value.get("placeholder"), str):
                out[str(key)] = Clearing(value["placeholder"], bool(value.get("clear_inputs")))
        return out


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


#: The share of the model's context window past which the recommended stacks' editor clears:
#: a safety net for a run that would otherwise outgrow its window, never a saving. Replayed on
#: agents' own long sessions (``shared/data/native``), clearing at any fixed trigger those sessions
#: pass (they reach 233k tokens) cost references the agent went back to (recall 0.917-0.963 in 5
#: of 24 sessions at 60k); on the 387 dev runs it saved nothing once outputs are shortened.
SAFETY_NET_SHARE = 0.8


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextEditorSettings:
    """Options of the context editor; every default lives here.

    ``mode="cache_aware"`` (the default) clears only what pays for the prompt-cache re-write it
    causes; ``"plain"`` clears whenever the request passes the trigger, as the reference editor
    does. ``horizon``: in cache-aware mode without ``expected_calls``, a clearing must pay back
    within this share of the calls made so far (see :mod:`tokenlean.context_editor._cache`).
    ``keep``: the newest results never cleared; 6, not the reference editor's 3, since with 3
    Claude Code sessions lost references they went back to (recall 0.956 on one source, 0.981
    with 6; ``benchmarks/loso_editor.md``).
    """

    trigger_tokens: int = 30_000
    keep: int = 6
    batch: int = 5
    exclude_tools: frozenset[str] = frozenset()
    clear_tool_inputs: bool = False
    placeholder: str | PlaceholderFn | None = None
    min_saved_tokens: int = 50
    mode: Mode = "cache_aware"
    pricing: CachePricing = ANTHROPIC
    expected_calls: int | None = None
    horizon: float = 0.1
    retrieval_tool: str | None = DEFAULT_RETRIEVAL_TOOL

    def __post_init__(self) -> None:
        for name in ("trigger_tokens", "keep", "min_saved_tokens"):
            checks.integer(getattr(self, name), name, at_least=0)
        checks.integer(self.batch, "batch", at_least=1)
        checks.flag(self.clear_tool_inputs, "clear_tool_inputs")
        checks.one_of(self.mode, "mode", MODES)
        if self.expected_calls is not None:
            checks.integer(self.expected_calls, "expected_calls", at_least=1)
        checks.number(self.horizon, "horizon", above=0)
        if self.retrieval_tool is not None:
            checks.identifier(self.retrieval_tool, "retrieval_tool")
        if self.placeholder is not None and not isinstance(self.placeholder, str):
            wanted = "a string or a callable (tool, length) -> str"
            checks.function(self.placeholder, "placeholder", wanted=wanted)
        object.__setattr__(self, "exclude_tools", _names(self.exclude_tools))
        object.__setattr__(self, "pricing", resolve_pricing(self.pricing))

    @classmethod
    def safety_net(
        cls, context_window: int, pricing: CachePricing | str = ANTHROPIC
    ) -> ContextEditorSettings:
        """The recommended stacks' editor for a model of ``context_window`` tokens: it clears
        old results, in batches, once a request passes :data:`SAFETY_NET_SHARE` of the window.
        Plain mode: there the run must shrink or fail, whatever the cache re-write costs."""
        checks.integer(context_window, "context_window", at_least=1)
        trigger = int(context_window * SAFETY_NET_SHARE)
        return cls(trigger_tokens=trigger, mode="plain", pricing=resolve_pricing(pricing))

    def placeholder_for(self, tool: str, length: int, handle: str, retrieval: bool) -> str:
        """The text a cleared result is sent as; ``handle`` is what the retrieval tool reads."""
        if isinstance(self.placeholder, str):
            return self.placeholder
        if self.placeholder is not None:
            return str(self.placeholder(tool, length))
        return default_placeholder(tool, length, handle, self.retrieval_tool if retrieval else None)


def _names(value: object) -> frozenset[str]:
    return checks.collection_of_names(value, "exclude_tools")


def default_placeholder(tool: str, length: int, handle: str, retrieval_tool: str | None) -> str:
    """Names the tool and says how to get the result back (``handle``: what the tool reads)."""
    if retrieval_tool:
        how = f'call `{retrieval_tool}` with "{handle}" to read it again'
    else:
        how = "call the tool again if you need it"
    return f"[`{tool}` result cleared to save context ({length:,} characters); {how}.]"
