"""The candidates the context editor's ``trigger_tokens`` and ``keep`` were chosen from, for
``benchmarks.loso``.

``python -m benchmarks.loso --plugin benchmarks.tune_editor -j 2 --out
benchmarks/loso_editor.md`` replays ``ContextEditorMiddleware()`` alone (cache-aware, its other
options at their defaults, the horizon among them: ``benchmarks/loso_horizon.md``) with each pair
in the grid below over all dev trajectories and, leaving each source out in turn, picks the one
that bills least on the others while keeping recall there and never costing more than no
middleware, then reports it on the source left out.

- ``trigger_tokens``: the prompt size from which anything is cleared (30,000, 60,000 or
  100,000 tokens);
- ``keep``: the most recent tool results never cleared (3, 6 or 10).
"""

from __future__ import annotations

from typing import Any

from tokenlean.replay._strategies import register

TRIGGERS = (30_000, 60_000, 100_000)
KEEPS = (3, 6, 10)


def _factory(trigger: int, keep: int) -> Any:
    def factory() -> list[Any]:
        from tokenlean.langchain import ContextEditorMiddleware

        return [ContextEditorMiddleware(trigger_tokens=trigger, keep=keep)]

    return factory


GRID: list[str] = []
for trigger in TRIGGERS:
    for keep in KEEPS:
        name = f"context-editor-{trigger // 1000}k-keep{keep}"
        label = f"context-editor, trigger {trigger:,} tokens, keep {keep}"
        register(name, _factory(trigger, keep), label, default=False)
        GRID.append(name)
