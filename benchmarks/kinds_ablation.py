"""What each content-kind rule of the shortener costs and buys: ``shorten`` with one rule off.

``tokenlean replay TRAJECTORIES --plugin benchmarks.kinds_ablation -s none -s shorten
-s shorten-no-views ... --by-source`` replays them; ``benchmarks/kinds.md`` has the table.
Each variant sets the rule's :class:`~tokenlean.shorten._options.ShortenSettings` field to the value
that switches it off, so ``shorten`` minus a variant is that rule's effect.
"""

from __future__ import annotations

from typing import Any

from tokenlean.replay._strategies import register
from tokenlean.shorten._options import ShortenSettings


def _shortening(**options: Any) -> Any:
    def factory() -> list[Any]:
        from tokenlean.langchain.output_shortening import ToolOutputShorteningMiddleware

        return [ToolOutputShorteningMiddleware(options=ShortenSettings(**options))]

    return factory


#: name -> (settings that switch the rule off, what the rule does)
RULES: dict[str, tuple[dict[str, int], str]] = {
    "shorten-no-views": (
        {"view_keep_tokens": 0},
        "file views with line numbers under 3,000 tokens pass whole",
    ),
    "shorten-no-text-floor": (
        {"text_keep_tokens": 0},
        "text, documents and listings under 1,000 tokens pass whole",
    ),
    "shorten-no-docs": (
        {"text_keep_tokens": 0, "text_keep_percent": 0},
        "documents keep half of themselves (headings, tables, conclusions first)",
    ),
    "shorten-no-scripts": (
        {"script_max_tokens": 1},
        "the agent's own scripts keep their value lines (300 tokens)",
    ),
    "shorten-no-json-keep": (
        {"json_keep_tokens": 0},
        "JSON records under 600 tokens stay whole",
    ),
    "shorten-no-kinds": (
        {
            "view_keep_tokens": 0,
            "text_keep_tokens": 0,
            "text_keep_percent": 0,
            "script_max_tokens": 1,
            "json_keep_tokens": 0,
        },
        "all five rules above off",
    ),
}

for _name, (_settings, _what) in RULES.items():
    register(_name, _shortening(**_settings), f"shorten without: {_what}", default=False)
