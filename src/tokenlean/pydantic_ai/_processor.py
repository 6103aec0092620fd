"""The history processor: pydantic-ai messages in, the one planner, edits written back.

pydantic-ai runs a history processor before every model request on the whole history, and
keeps what it returns as the run's history. The processor is therefore a pure function of the
history it is given: it reads it as neutral messages (:mod:`._view`), asks the
:class:`~tokenlean.pipeline.Planner` for the edits (tool results shortened as at first sight,
long inputs of calls that have run cut, as behind the proxy), keeps the originals the markers
point to, and writes the edits onto copies of the parts they name. What the model was sent
once is sent again byte for byte: a part already edited carries the planner's mark and is
planned as done, and a part never edited plans the same way every time.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic_ai import RunContext, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.tools import ToolDefinition

from tokenlean._failopen import fail_open
from tokenlean.history import Keeping, ReadBackMode, keeping, rewrite_history
from tokenlean.pydantic_ai import _view
from tokenlean.pydantic_ai._tool import read_original_tool
from tokenlean.settings import RawSettings
from tokenlean.store import OriginalStore
from tokenlean.transcript import Edit

__all__ = ["HistoryProcessor", "ReadBackMode", "history_processor"]

logger = logging.getLogger("tokenlean.pydantic_ai")


class HistoryProcessor:
    """A pydantic-ai history processor (``list[ModelMessage] -> list[ModelMessage]``).

    Made by :func:`history_processor`; ``tool`` is the ``read_original`` tool to give the
    agent (``None`` with ``read_back="file"`` or when no originals are kept); ``kept`` holds
    ``store``, where originals go, and ``planner``, the one planner (its memo shared by every
    run it serves).
    """

    def __init__(self, kept: Keeping, tool: Tool[Any] | None):
        self.kept = kept
        self.tool = tool

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """``messages`` with tokenlean's edits written back; unchanged on any failure."""
        done = rewrite_history(_HISTORY, messages, self.kept, logger=logger, failure=_FAILURE)
        return done.history if done is not None else messages


_FAILURE = ("tokenlean could not shorten a pydantic-ai history; sent as is",)


class _History:
    """pydantic-ai's message history as a :class:`~tokenlean.history.HistoryAdapter`."""

    def read(self, history: Sequence[ModelMessage]) -> _view.PartView:
        return _view.read(history)

    def writable(self, edit: Edit, view: _view.PartView, history: Sequence[ModelMessage]) -> bool:
        return _view.writable(edit, view, history)

    def apply(
        self, history: Sequence[ModelMessage], view: _view.PartView, edits: Sequence[Edit]
    ) -> list[ModelMessage]:
        return _view.apply(history, view, edits)


_HISTORY = _History()


def history_processor(
    *,
    store: OriginalStore | None = None,
    read_back: ReadBackMode = "tool",
    settings: RawSettings | None = None,
) -> HistoryProcessor:
    """A history processor that shortens tool results at first sight and cuts past inputs.

    pydantic-ai 2.x takes it as a capability, 1.x as a history processor (late 1.x releases
    take both, and deprecate ``history_processors``); either way give the agent its
    ``read_original`` tool (with ``read_back="tool"``): it lists itself in a run's requests
    when the run is offered it (``settings.offer_tool``: from the first call when its schema
    is a negligible share of that prompt, else never, and markers then name no way back).
    The processor is the one-argument, sync form (pydantic-ai runs it in a worker thread)::

        shortener = history_processor()
        # pydantic-ai 2.x
        from pydantic_ai.capabilities import ProcessHistory
        agent = Agent(model, tools=[..., shortener.tool],
                      capabilities=[ProcessHistory(shortener)])
        # pydantic-ai 1.x (before capabilities)
        agent = Agent(model, tools=[..., shortener.tool], history_processors=[shortener])

    Args:
        store: where originals are kept. With ``read_back="tool"`` any
            :class:`~tokenlean.store.OriginalStore` (default: a new in-memory store, which
            ``shortener.tool`` reads); with ``"file"`` a
            :class:`~tokenlean.store.FolderOriginalStore` (default: the settings' folder,
            :func:`~tokenlean.store.default_originals_dir`).
        read_back: ``"tool"``: markers name ``read_original``; ``"file"``: markers name a
            file and line range, for agents that can read files (no tool is added).
        settings: what is shortened and how: the raw rewrite's
            :class:`~tokenlean.raw.RawSettings`, whose defaults are the recommended
            middleware's (``originals_dir`` is the ``"file"`` store's default folder).
    """
    kept = keeping(settings, store, read_back)
    if kept.tool_store is None:
        return HistoryProcessor(kept, None)
    return HistoryProcessor(kept, read_original_tool(kept.tool_store, prepare=_Listing(kept)))


class _Listing:
    """The tool's ``prepare``: it is in a request exactly when the run is offered it
    (:meth:`~tokenlean.history.Keeping.offered`, read from the history as the processor reads
    it), so a marker names it only in a request that lists it."""

    def __init__(self, kept: Keeping):
        self.kept = kept

    def __call__(self, ctx: RunContext[Any], tool: ToolDefinition) -> ToolDefinition | None:
        with fail_open(logger, "tokenlean could not tell whether to offer %s; offered", tool.name):
            first: list[ModelMessage] = []
            for message in ctx.messages:  # the run's first call decides (the rest is not read)
                if isinstance(message, ModelResponse):
                    break
                first.append(message)
            return tool if self.kept.offered(_view.read(first).messages) else None
        return tool
