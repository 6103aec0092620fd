"""What a :class:`~tokenlean.langchain.TokenSavingMiddleware` saved: the reference's counters."""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["TokenSavingStats"]


@dataclass(frozen=True, slots=True)
class TokenSavingStats:
    """Counters over every call of one middleware instance (a snapshot; all default to 0).

    The reference fields, plus token (o200k or the configured counter) savings next to each
    character figure.
    """

    compressions: int = 0
    chars_saved: int = 0
    tokens_saved: int = 0
    early_exits: int = 0
    perplexity_compressions: int = 0
    perplexity_chars_saved: int = 0
    perplexity_tokens_saved: int = 0
    perplexity_cache_hits: int = 0

    def as_dict(self) -> dict[str, int]:
        """Every counter by name."""
        return asdict(self)
