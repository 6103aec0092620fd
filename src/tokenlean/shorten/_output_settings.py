"""How tool results are shortened at first sight (:class:`OutputShorteningSettings`): every
default in one place, checked when the settings are made."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Literal, get_args

from tokenlean import checks
from tokenlean.cost import ANTHROPIC, CachePricing, resolve_pricing
from tokenlean.shorten._options import DEFAULT_OPTIONS, ShortenSettings
from tokenlean.store import RETRIEVAL_TOOL
from tokenlean.tokens import DEFAULT_COUNTER, TokenCounter
from tokenlean.transcript import Message, mark_of

__all__ = [
    "BACKOFF_LEVELS",
    "CAPABILITY",
    "NEVER_SIMILAR",
    "OFFER_TOOL",
    "OfferTool",
    "OutputShorteningSettings",
    "tool_names",
]

#: The name under which output shortening marks the results it rewrote.
CAPABILITY = "output_shortening"
OfferTool = Literal["when_it_pays", "always"]
OFFER_TOOL: tuple[OfferTool, ...] = get_args(OfferTool)
#: Read-backs of one tool's originals after which its results are left whole.
BACKOFF_LEVELS = 2
#: A run length no output reaches: similar lines are not collapsed.
NEVER_SIMILAR = 1 << 30


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputShorteningSettings:
    """How tool results are shortened at first sight; every default lives here.

    Args:
        min_tokens: Results of at most this many tokens are left alone.
        options: Every setting of :func:`~tokenlean.shorten.shorten`.
        only: Shorten only these tools' results (``None``: every tool's).
        never: Never shorten these tools' results (e.g. one whose output the agent edits).
        dedupe: Point to lines the model was already shown instead of repeating them.
        min_saving: Skip a shortening that saves less than this share of a result's tokens.
        tool_name: The retrieval tool that markers name (its own results are never shortened).
        counter: Token counter for thresholds and reports (default: a fast estimate).
        orphans: Also shorten results whose call the transcript does not show (a provider API
            can keep the calls server-side); by default such results pass through untouched.
        pricing: Whose cache prices decide when a thread's savings pay for offering the
            retrieval tool (a preset name or a :class:`~tokenlean.cost.CachePricing`).
        min_remaining_calls: The later calls the tool's schema is charged for, at least, when
            judging that (later on, a run is expected to last as long again).
        offer_tool: ``"when_it_pays"``: the retrieval tool is in a thread's tool list from its
            first call when its schema is at most ``start_share`` of that prompt, else from the
            first call whose cuts save more than re-writing the cached prompt for it costs (the
            prompt is short early in a run) or from a call whose cache is cold anyway; until
            then no marker names it, and only exact repeats are cut; ``"always"``: from the
            first call.
        start_share: The share of the first prompt under which the tool's schema counts as
            negligible (a long system prompt and tool list, as coding agents send).
    """

    min_tokens: int = 100
    options: ShortenSettings = DEFAULT_OPTIONS
    only: frozenset[str] | None = None
    never: frozenset[str] = frozenset()
    dedupe: bool = True
    min_saving: float = 0.1
    tool_name: str = RETRIEVAL_TOOL
    counter: TokenCounter | None = None
    orphans: bool = False
    pricing: CachePricing = ANTHROPIC
    min_remaining_calls: int = 32
    offer_tool: OfferTool = "when_it_pays"
    start_share: float = 0.01

    def __post_init__(self) -> None:
        for field_name in ("min_tokens", "min_remaining_calls"):
            value = getattr(self, field_name)
            checks.integer(value, field_name, at_least=0, wanted="a non-negative int")
        wanted = "a number in [0, 1)"
        checks.number(self.min_saving, "min_saving", at_least=0, below=1, wanted=wanted)
        checks.number(self.start_share, "start_share", at_least=0, at_most=1)
        checks.instance(self.options, "options", ShortenSettings, "a ShortenSettings")
        checks.identifier(self.tool_name, "tool_name")
        if self.counter is not None:
            checks.token_counter(self.counter, "counter")
        checks.flag(self.dedupe, "dedupe")
        object.__setattr__(self, "pricing", resolve_pricing(self.pricing))
        checks.one_of(self.offer_tool, "offer_tool", OFFER_TOOL)
        only = None if self.only is None else tool_names("only", self.only)
        object.__setattr__(self, "only", only)
        object.__setattr__(self, "never", tool_names("never", self.never))

    def eligible(self, message: Message) -> bool:
        """A text-only tool result of an allowed tool that no output shortening touched yet."""
        if message.role != "tool" or not message.tool_call_id or not message.is_text_only:
            return False
        if mark_of(message, CAPABILITY) is not None:
            return False
        name = message.name or ""
        if name == self.tool_name or name in self.never:
            return False
        return self.only is None or name in self.only

    def count(self, text: str) -> int:
        return (self.counter or DEFAULT_COUNTER).count(text)

    def options_for(self, level: int) -> ShortenSettings | None:
        """The options for a tool whose originals the agent read back ``level`` times (``None``:
        leave its results whole). A read-back gives that tool's results four times the budget
        and stops collapsing similar lines (what was read back was often among them); after
        :data:`BACKOFF_LEVELS` of them its results are no longer shortened."""
        if level <= 0:
            return self.options
        if level >= BACKOFF_LEVELS:
            return None
        grow = 4**level
        options = self.options
        return replace(
            options,
            max_tokens=options.max_tokens * grow,
            code_max_tokens=options.code_max_tokens * grow,
            code_keep_percent=min(100, options.code_keep_percent * 2**level),
            similar_run=NEVER_SIMILAR,
        )


def tool_names(parameter: str, names: object) -> frozenset[str]:
    """``names`` as a set of tool names; a lone string (a common slip) is refused."""
    if isinstance(names, str) or not isinstance(names, Collection):
        raise ValueError(f"only and never take collections of tool names; {parameter}={names!r}")
    if not all(isinstance(name, str) for name in names):
        raise ValueError(f"{parameter} takes tool names (strings), got {sorted(map(repr, names))}")
    return frozenset(names)
