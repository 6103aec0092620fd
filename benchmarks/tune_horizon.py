"""The candidates the context editor's ``horizon`` was chosen from, for ``benchmarks.loso``.

``python -m benchmarks.loso --plugin benchmarks.tune_horizon -j 2 --out
benchmarks/loso_horizon.md`` replays ``ContextEditorMiddleware()`` (cache-aware, its other options
at their defaults) with each horizon in ``HORIZONS`` over all dev trajectories and, leaving each
source out in turn, picks the one that bills least on the others while never costing more than
no middleware there, then reports it on the source left out.

``horizon`` is the share of the calls made so far within which a clearing must pay back its cache
re-write: 1.0 is the median remaining length of a run under the Copernican estimate, 0.1 a length
the run reaches about nine times in ten.
"""

from __future__ import annotations

from typing import Any

from tokenlean.replay._strategies import register

HORIZONS = (1.0, 0.5, 0.25, 0.2, 0.1)


def _factory(horizon: float) -> Any:
    def factory() -> list[Any]:
        from tokenlean.langchain import ContextEditorMiddleware

        return [ContextEditorMiddleware(horizon=horizon)]

    return factory


GRID: list[str] = []
for horizon in HORIZONS:
    name = f"context-editor-horizon{horizon:g}"
    register(name, _factory(horizon), f"context-editor, horizon {horizon:g}", default=False)
    GRID.append(name)
