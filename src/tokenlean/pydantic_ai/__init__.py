"""pydantic-ai adapter (needs the ``pydantic-ai`` extra): tokenlean as a history processor.

::

    from tokenlean.pydantic_ai import history_processor

    shortener = history_processor()
    agent = Agent(model, tools=[..., shortener.tool],
                  capabilities=[ProcessHistory(shortener)])   # 1.x: history_processors=[...]

The processor translates pydantic-ai messages to the neutral view, runs the one planner
(:class:`tokenlean.pipeline.Planner`) and writes its edits back onto copies of the parts; see
:func:`history_processor`.
"""

from __future__ import annotations

from tokenlean.pydantic_ai._processor import HistoryProcessor, ReadBackMode, history_processor
from tokenlean.pydantic_ai._tool import read_original_tool
from tokenlean.pydantic_ai._view import read as to_view

__all__ = [
    "HistoryProcessor",
    "ReadBackMode",
    "history_processor",
    "read_original_tool",
    "to_view",
]
