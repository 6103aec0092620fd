"""The token-saving settings (the reference's names and defaults) and the stage of a message."""

from __future__ import annotations

from dataclasses import dataclass

from tokenlean import checks
from tokenlean.cost import ANTHROPIC, CachePricing, resolve_pricing
from tokenlean.token_saving._words import WordClassifier, check_keep_ratio

__all__ = ["CompressionSettings", "Stage"]

#: An age past every window: the stage a message keeps for good.
_FOREVER = 1 << 30


@dataclass(frozen=True, slots=True)
class Stage:
    """What a message gets: head+tail truncation, and word compression at ``keep_ratio``."""

    head_tail: bool
    keep_ratio: float | None

    @property
    def key(self) -> str:
        ratio = "-" if self.keep_ratio is None else str(self.keep_ratio)
        return f"{'ht' if self.head_tail else '-'}:{ratio}"


_INT_SETTINGS = (
    "compress_threshold_chars",
    "head_keep_chars",
    "tail_keep_chars",
    "keep_recent_tool_messages",
    "perplexity_recent_cutoff",
    "perplexity_mid_cutoff",
    "perplexity_min_content_words",
)


@dataclass(frozen=True, slots=True)
class CompressionSettings:
    """The compression settings (the reference's names and defaults, each in this one place);
    ``classifier=None``: no word compression."""

    compress_threshold_chars: int = 1800
    head_keep_chars: int = 900
    tail_keep_chars: int = 700
    keep_recent_tool_messages: int = 2
    enable_compression: bool = True
    classifier: WordClassifier | None = None
    perplexity_recent_cutoff: int = 3
    perplexity_mid_cutoff: int = 10
    perplexity_keep_ratio_mid: float = 0.55
    perplexity_keep_ratio_old: float = 0.30
    perplexity_window_words: int = 50
    perplexity_min_content_words: int = 30
    compress_once: bool = True
    #: ``compress_once`` writes a compression when it pays back within at most this many calls.
    payback_calls: int = 20
    #: Whose cache prices decide whether writing pending compressions pays (``compress_once``).
    pricing: CachePricing = ANTHROPIC

    def __post_init__(self) -> None:
        for name in _INT_SETTINGS:
            checks.integer(getattr(self, name), name, at_least=0, wanted="a non-negative integer")
        for name in ("perplexity_window_words", "payback_calls"):
            checks.integer(getattr(self, name), name, at_least=1, wanted="a positive integer")
        checks.flag(self.enable_compression, "enable_compression")
        checks.flag(self.compress_once, "compress_once")
        recent = self.perplexity_recent_cutoff
        wanted = ">= perplexity_recent_cutoff"
        checks.integer(
            self.perplexity_mid_cutoff, "perplexity_mid_cutoff", at_least=recent, wanted=wanted
        )
        check_keep_ratio("perplexity_keep_ratio_mid", self.perplexity_keep_ratio_mid)
        check_keep_ratio("perplexity_keep_ratio_old", self.perplexity_keep_ratio_old)
        if self.classifier is not None:
            wanted = "callable (words -> keep flags)"
            checks.function(self.classifier, "perplexity_classifier", wanted=wanted)
        object.__setattr__(self, "pricing", resolve_pricing(self.pricing))

    def tier(self, calls_ago: int) -> float | None:
        """The keep ratio for a message ``calls_ago`` calls old (``None``: recent, or words off)."""
        if self.classifier is None or calls_ago < self.perplexity_recent_cutoff:
            return None
        if calls_ago < self.perplexity_mid_cutoff:
            return self.perplexity_keep_ratio_mid
        return self.perplexity_keep_ratio_old

    def stage(self, role: str, tools_after: int, calls_ago: int) -> Stage | None:
        """What a message with this role and age should get now, or ``None`` for nothing."""
        head_tail = self.enable_compression and role == "tool"
        ratio = self.tier(calls_ago)
        old_for_head_tail = tools_after >= self.keep_recent_tool_messages
        if self.compress_once:
            if (head_tail and not old_for_head_tail) or (self.classifier and ratio is None):
                return None  # still inside the recent window of some lever
        else:
            head_tail = head_tail and old_for_head_tail
        return Stage(head_tail, ratio) if head_tail or ratio is not None else None

    def final(self, role: str, tools_after: int, calls_ago: int) -> bool:
        """Whether a message of this role and age has the stage it will keep for good."""
        return self.stage(role, tools_after, calls_ago) == self.stage(role, _FOREVER, _FOREVER)
