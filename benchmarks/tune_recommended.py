"""Variants replayed to choose the defaults of ``recommended_middleware`` (see docs there).

Load with ``tokenlean replay --plugin benchmarks.tune_recommended -s none -s NAME ...``. Each name
encodes its settings: ``rec-t<trigger k>-k<keep>-b<batch>`` is first-sight shortening followed by
the cache-aware context editor with that trigger (thousands of tokens), keep count and batch size;
``rec-in...`` adds input shortening; ``stack-...`` varies the recommended stack's constants.
"""

from __future__ import annotations

from typing import Any

from tokenlean.replay._strategies import register


def _stack(trigger: int, keep: int, batch: int, mode: str = "cache_aware") -> Any:
    def build() -> list[Any]:
        from tokenlean.langchain.context_editor import ContextEditorMiddleware
        from tokenlean.langchain.output_shortening import ToolOutputShorteningMiddleware

        return [
            ToolOutputShorteningMiddleware(),
            ContextEditorMiddleware(
                trigger_tokens=trigger, keep=keep, batch=batch, mode=mode, pricing="anthropic"
            ),
        ]

    return build


for trigger in (8, 10, 12, 15, 20, 25, 30):
    for keep in (3, 5, 8, 12):
        for batch in (5, 10):
            register(
                f"rec-t{trigger}-k{keep}-b{batch}",
                _stack(trigger * 1000, keep, batch),
                f"shorten + cache-aware editor, trigger {trigger}k, keep {keep}, batch {batch}",
                default=False,
            )
            register(
                f"rec-plain-t{trigger}-k{keep}-b{batch}",
                _stack(trigger * 1000, keep, batch, "plain"),
                f"shorten + plain editor, trigger {trigger}k, keep {keep}, batch {batch}",
                default=False,
            )


def _with_inputs(trigger: int | None, min_tokens: int, head: int, tail: int) -> Any:
    def build() -> list[Any]:
        from tokenlean.langchain.context_editor import ContextEditorMiddleware
        from tokenlean.langchain.input_shortening import ToolInputShorteningMiddleware
        from tokenlean.langchain.output_shortening import ToolOutputShorteningMiddleware
        from tokenlean.store import InMemoryOriginalStore

        store = InMemoryOriginalStore()
        stack: list[Any] = [
            ToolInputShorteningMiddleware(
                store=store, retrieval_tool=False, min_tokens=min_tokens, head_lines=head,
                tail_lines=tail,
            ),
            ToolOutputShorteningMiddleware(store=store),
        ]  # fmt: skip
        if trigger:
            stack.append(ContextEditorMiddleware(trigger_tokens=trigger, mode="cache_aware"))
        return stack

    return build


for min_tokens in (150, 300):
    for head, tail in ((12, 6), (6, 3)):
        for trigger in (0, 20, 30):
            register(
                f"rec-in{min_tokens}-h{head}-t{trigger}",
                _with_inputs(trigger * 1000, min_tokens, head, tail),
                f"shorten outputs + inputs over {min_tokens} tokens (head {head}, tail {tail})"
                + (f" + cache-aware editor at {trigger}k" if trigger else ""),
                default=False,
            )


def _variant(min_tokens: int, head: int, tail: int, trigger: int, provider: str) -> Any:
    def build() -> list[Any]:
        import tokenlean.langchain.recommended as rec

        saved = (rec.INPUT_MIN_TOKENS, rec.INPUT_HEAD_LINES, rec.INPUT_TAIL_LINES)
        rec.INPUT_MIN_TOKENS, rec.INPUT_HEAD_LINES, rec.INPUT_TAIL_LINES = min_tokens, head, tail
        window = round(trigger / rec.EDITOR_WINDOW_SHARE) if trigger else None
        try:
            return rec.recommended_middleware(provider, context_window=window)  # type: ignore[arg-type]
        finally:
            rec.INPUT_MIN_TOKENS, rec.INPUT_HEAD_LINES, rec.INPUT_TAIL_LINES = saved

    return build


for min_tokens, head, tail in ((150, 6, 3), (200, 8, 4), (300, 12, 6)):
    for trigger in (30, 40, 60):
        for provider in ("anthropic", "openai"):
            register(
                f"stack-in{min_tokens}-h{head}-e{trigger}-{provider}",
                _variant(min_tokens, head, tail, trigger * 1000, provider),
                f"recommended stack with inputs over {min_tokens} cut to {head}+{tail} lines, "
                f"editor at {trigger}k, {provider} pricing",
                default=False,
            )
