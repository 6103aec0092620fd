"""The candidates ``file_keep_tokens`` was chosen from, for ``benchmarks.loso``.

``python -m benchmarks.loso CODING --plugin benchmarks.tune_files --floor 0.95 --keep-within
0.05 --keep every -j 2 --out benchmarks/loso_files.md`` replays every name in ``GRID`` over the
coding trajectories in ``CODING`` and, leaving each source (and each agent family) out in turn,
picks on the others and reports the pick on what was left out.

One knob, inside the recommended stack (everything else as it ships): ``file_keep_tokens``,
the size up to which a whole source file read with line numbers (Claude Code's and OpenCode's
``Read`` of a path alone, ``cat -n f``) stays whole (2,000 to 24,000 tokens; 12,000 is what any
file view keeps), with half of a longer one kept (``code_keep_percent``), the retrieval tool
listed from the first call (the candidates differ only where results are cut). A read the agent
asked for is the riskiest kind to cut, so the pick keeps where in doubt: ``--keep every``, the
cheapest candidate that keeps on every source as many references as any (where recall stops
rising). Run on the nine coding sources, each source and each agent family held out:
``benchmarks/loso_files.md`` (12,000, and why a floor of 0.95).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from benchmarks._common import recommended_with
from tokenlean.replay._strategies import register
from tokenlean.shorten._options import DEFAULT_OPTIONS

CANDIDATES = ((24000, 50), (12000, 50), (6000, 50), (4000, 50), (2000, 50))


def _factory(tokens: int, percent: int) -> Any:
    def factory() -> list[Any]:
        options = replace(DEFAULT_OPTIONS, file_keep_tokens=tokens, code_keep_percent=percent)
        # read_original listed from the first call, as under a coding agent's long system
        # prompt: without it nothing is cut and the knob cannot be told apart
        return recommended_with(options=options, offer_tool="always")

    return factory


GRID: list[str] = []
for tokens, percent in CANDIDATES:
    name = f"recommended-file{tokens}-keep{percent}"
    label = f"recommended, whole source files read whole to {tokens} tokens, {percent}% beyond"
    register(name, _factory(tokens, percent), label, default=False)
    GRID.append(name)
