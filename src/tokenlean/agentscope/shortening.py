"""Shorten tool results at first sight, and cut the long inputs of calls that have run, in an
AgentScope agent's memory.

Before every model call (``on_reasoning``) the agent's context is read as neutral messages
(:mod:`._view`) and planned by the one :class:`~tokenlean.pipeline.Planner`, under the
:class:`~tokenlean.raw.RawSettings` every way in shares; its edits are written into
``agent.state.context`` itself, onto copies of the blocks they name. A result is therefore
shortened before the model first sees it, and the model is sent the same bytes for it on every
later call: the edit is in memory, marked as done (in metadata AgentScope never sends), so the
planner leaves it alone from then on. Originals go to a store the ``read_original`` tool reads
(``read_back="tool"``, the tool joins the toolkit before the first model call of a run it is
offered to, :class:`~tokenlean.history.Offer`) or to files the
agent reads (``read_back="file"``).

AgentScope itself truncates a result past ``ContextConfig.tool_result_limit`` tokens (50,000 by
default) before it reaches memory; tokenlean sees what is left. A failure is logged and the
agent goes on with its memory as it was.
"""

from __future__ import annotations

import itertools
import logging
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from agentscope.message import Msg, ToolCallBlock, ToolResultBlock
from agentscope.middleware import MiddlewareBase
from agentscope.tool import FunctionTool, ToolBase

from tokenlean._failopen import fail_open
from tokenlean.agentscope import _view
from tokenlean.agentscope._hooks import Events, Handler, Kwargs
from tokenlean.agentscope._tool import read_original_tool
from tokenlean.history import Keeping, ReadBackMode, keeping, rewrite_history
from tokenlean.offering import names_tool
from tokenlean.settings import RawSettings
from tokenlean.store import OriginalStore
from tokenlean.tokens import DEFAULT_COUNTER, memoized, tool_schema_text
from tokenlean.transcript import Edit

if TYPE_CHECKING:
    from agentscope.agent import Agent

__all__ = ["ShorteningStats", "ToolInputShorteningMiddleware", "ToolOutputShorteningMiddleware"]

logger = logging.getLogger("tokenlean.agentscope")


@dataclass(frozen=True, slots=True)
class ShorteningStats:
    """What one middleware instance has done over every agent it served."""

    results_shortened: int = 0
    inputs_cut: int = 0
    tokens_saved: int = 0
    errors: int = 0


class _Shortening(MiddlewareBase):
    """The planner, its originals and the retrieval tool; the two public classes differ only
    in what the planner is asked to shorten."""

    def __init__(self, kept: Keeping) -> None:
        self.kept = kept
        self.tool: FunctionTool | None = (
            read_original_tool(kept.tool_store) if kept.tool_store is not None else None
        )
        self.stats = ShorteningStats()
        self._counter = memoized(kept.planner.policy.counter or DEFAULT_COUNTER)
        # per agent, what its run was told at the first call this middleware saw of it: later
        # calls need not read the whole memory again to learn it
        self._decided: weakref.WeakKeyDictionary[Agent, bool] = weakref.WeakKeyDictionary()

    async def list_tools(self) -> list[ToolBase]:
        return [self.tool] if self.tool is not None else []

    async def on_reasoning(
        self, agent: Agent, input_kwargs: Kwargs, next_handler: Handler
    ) -> Events:
        with fail_open(
            logger,
            "tokenlean could not shorten an AgentScope context; sent as is",
            on_error=self._failed,
        ):
            self.shorten(agent.state.context, offered=await self._offer_tool(agent))
        async for event in next_handler(**input_kwargs):
            yield event

    def shorten(self, context: list[Msg], *, offered: bool | None = None) -> None:
        """Plan ``context`` and write the edits into it (in place; see the module docstring);
        ``offered``: whether the request lists ``read_original`` (``None``: as the context's
        first messages say, :meth:`~tokenlean.history.Keeping.offered`)."""
        done = rewrite_history(
            _CONTEXT,
            context,
            self.kept,
            logger=logger,
            failure=("tokenlean could not shorten an AgentScope context; sent as is",),
            on_error=self._failed,
            offered=offered,
        )
        if done is None:
            return
        edits = done.written
        results = sum(1 for e in edits if e.edit.new_content is not None)
        self.stats = replace(
            self.stats,
            results_shortened=self.stats.results_shortened + results,
            inputs_cut=self.stats.inputs_cut + sum(len(e.edit.tool_args) for e in edits),
            tokens_saved=self.stats.tokens_saved + sum(e.edit.tokens_saved for e in edits),
        )

    async def _offer_tool(self, agent: Agent) -> bool:
        """Put ``read_original`` in the toolkit where the run is offered it (at its first
        call; :class:`~tokenlean.offering.Offer`, with the system prompt and the other tools'
        schemas counted; later, only where its markers name it,
        :func:`~tokenlean.offering.names_tool`), and say whether the request will list it:
        when it is there already (the user's, or ours) it is."""
        if self.tool is None:
            return False
        if await agent.toolkit.get_tool(self.tool.name) is not None:
            return True
        context = agent.state.context
        first = list(itertools.takewhile(lambda msg: msg.role != "assistant", context))
        if len(first) < len(context):
            # decided at the run's first call: a tool joining later would re-write the cached
            # prompt; only a restored run whose markers name it gets it back
            known = self._decided.get(agent)
            offered = (
                names_tool(_view.read(context).messages, self.tool.name) if known is None else known
            )
        else:
            offered = self.kept.offered(_view.read(first).messages, await self._fixed(agent))
        self._decided[agent] = offered
        if offered:
            await agent.toolkit.add_tool(self.tool)
        return offered

    async def _fixed(self, agent: Agent) -> int:
        """Tokens of the agent's system prompt and tool schemas (an agent built without a
        system prompt AgentScope exposes counts none: the tool is offered less often)."""
        system = getattr(agent, "_system_prompt", "")  # no public accessor before formatting
        groups = agent.state.tool_context.activated_groups
        schemas = await agent.toolkit.get_tool_schemas(groups)
        text = tool_schema_text(schemas) + (system if isinstance(system, str) else "")
        return self._counter.count(text)

    def _failed(self) -> None:
        self.stats = replace(self.stats, errors=self.stats.errors + 1)


def _settings(settings: RawSettings | None) -> RawSettings:
    if settings is None:
        return RawSettings()
    if not isinstance(settings, RawSettings):
        raise ValueError(f"settings must be a RawSettings, got {settings!r}")
    return settings


class _Context:
    """An agent's memory as a :class:`~tokenlean.history.HistoryAdapter`: edits are written
    into it in place, with their marks (memory is written once)."""

    def read(self, context: Sequence[Msg]) -> _view.ContextView:
        return _view.read(context)

    def writable(self, edit: Edit, view: _view.ContextView, context: Sequence[Msg]) -> bool:
        """Whether an edit has a place to go: one text tool result, or calls of that turn."""
        i, blocks = view.where[edit.index]
        content = context[i].content
        if edit.new_content is not None:
            if not isinstance(edit.new_content, str) or len(blocks) != 1:
                return False
            block = content[blocks[0]]
            return isinstance(block, ToolResultBlock) and _view.result_text(block) is not None
        ids = {b.id for j in blocks if isinstance(b := content[j], ToolCallBlock)}
        return bool(edit.tool_args) and set(edit.tool_args) <= ids

    def apply(
        self, context: list[Msg], view: _view.ContextView, edits: Sequence[Edit]
    ) -> list[Msg]:
        _view.apply(context, view, edits, marks=True)
        return context


_CONTEXT = _Context()


class ToolOutputShorteningMiddleware(_Shortening):
    """Shorten each tool result once, before the model first sees it (module docstring).

    Args:
        inputs: also cut the long string inputs of calls that have run (one planner orders
            the two: inputs first, so no result points at lines of an input that was cut).
        settings: what is shortened and how (:class:`~tokenlean.raw.RawSettings`, whose
            defaults are the recommended middleware's; ``originals_dir`` is the file store's).
        store: where originals go: any :class:`~tokenlean.store.OriginalStore` with
            ``read_back="tool"`` (default: a new in-memory store, which ``self.tool`` reads;
            give a :class:`~tokenlean.store.FolderOriginalStore` to keep them across restarts),
            a ``FolderOriginalStore`` with ``"file"``.
        read_back: ``"tool"``: markers name ``read_original``, which the middleware puts in
            the toolkit before the first call; ``"file"``: markers name files and line ranges,
            for agents that read files (no tool is added).
    """

    def __init__(
        self,
        *,
        inputs: bool = False,
        settings: RawSettings | None = None,
        store: OriginalStore | None = None,
        read_back: ReadBackMode = "tool",
    ) -> None:
        if not isinstance(inputs, bool):
            raise ValueError(f"inputs must be a bool, got {inputs!r}")
        settings = _settings(settings)
        policy = settings.policy()
        if not inputs:
            policy = replace(policy, inputs=None)
        super().__init__(keeping(settings, store, read_back, policy=policy))


class ToolInputShorteningMiddleware(_Shortening):
    """Cut the long string inputs of calls that have run, before the model sees its turn
    again; tool results are left whole. Arguments as for
    :class:`ToolOutputShorteningMiddleware` (``settings.inputs`` says what is cut)."""

    def __init__(
        self,
        *,
        settings: RawSettings | None = None,
        store: OriginalStore | None = None,
        read_back: ReadBackMode = "tool",
    ) -> None:
        settings = _settings(settings)
        policy = settings.policy()
        nothing = replace(policy.outputs, only=frozenset())  # shortens no tool's results
        policy = replace(policy, outputs=nothing, inputs=policy.inputs or settings.inputs)
        super().__init__(keeping(settings, store, read_back, policy=policy))
