"""Shorten the long inputs of tool calls at first sight, after the calls have run.

An assistant turn is first sent back to the model on the call after the one that produced it.
Before that call, :class:`ToolInputShorteningMiddleware` cuts each long string argument of the
turn's tool calls to its head and tail lines (see :mod:`tokenlean.arguments`) and writes the turn
back under the same id, so the model only ever sees the short form and every later request
repeats its bytes: no prompt-cache break. Originals go to the same store as
:class:`~tokenlean.langchain.shortening.ToolOutputShorteningMiddleware` uses, so its
``read_original`` tool can show them. List this middleware *before* that one: the output
shortener treats tool-call inputs as already shown, so it must see them cut.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langgraph.runtime import Runtime

from tokenlean.arguments import (
    DEFAULT_HEAD_LINES,
    DEFAULT_MIN_TOKENS,
    DEFAULT_TAIL_LINES,
    ArgumentPolicy,
    CutArgument,
    shorten_arguments,
)
from tokenlean.langchain.shortening import (
    DEFAULT_TOOL_NAME,
    make_retrieval_tool,
    thread_scope,
)
from tokenlean.store import InMemoryOriginalStore, Original, OriginalStore

logger = logging.getLogger(__name__)

MARK = "tokenlean_inputs"


@dataclass(frozen=True, slots=True)
class InputShorteningStats:
    """Totals over every thread this instance served."""

    calls_shortened: int = 0
    tokens_before: int = 0
    tokens_after: int = 0


class ToolInputShorteningMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Cut long tool-call inputs to head and tail lines once the calls have run.

    Args:
        min_tokens, head_lines, tail_lines: see :class:`~tokenlean.arguments.ArgumentPolicy`.
        never: tools whose inputs are never cut.
        store: where originals are kept (share it with the output-shortening middleware).
        retrieval_tool: add a ``read_original`` tool; leave False when another middleware
            already adds one on the same store.
        tool_name: the retrieval tool's name, used in the omission marker. The marker names it
            when this middleware adds the tool, or when it was given a ``store`` or a
            ``tool_name`` (then another middleware is expected to read that store).
    """

    def __init__(
        self,
        *,
        min_tokens: int = DEFAULT_MIN_TOKENS,
        head_lines: int = DEFAULT_HEAD_LINES,
        tail_lines: int = DEFAULT_TAIL_LINES,
        never: Sequence[str] = (),
        store: OriginalStore | None = None,
        retrieval_tool: bool = True,
        tool_name: str = DEFAULT_TOOL_NAME,
    ) -> None:
        super().__init__()
        if isinstance(never, str):
            raise ValueError("never takes a collection of tool names, not a string")
        if not tool_name.isidentifier():
            raise ValueError(f"tool_name must be an identifier, got {tool_name!r}")
        self.policy = ArgumentPolicy(min_tokens, head_lines, tail_lines)
        self.never = frozenset(never)
        self.store: OriginalStore = store if store is not None else InMemoryOriginalStore()
        self.tool_name = tool_name
        self.tools = [make_retrieval_tool(self.store, name=tool_name)] if retrieval_tool else []
        readable = retrieval_tool or store is not None or tool_name != DEFAULT_TOOL_NAME
        self._marker_tool = tool_name if readable else None
        self._lock = threading.Lock()
        self._stats = InputShorteningStats()

    @property
    def stats(self) -> InputShorteningStats:
        with self._lock:
            return self._stats

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        planned = self._prepare(state)
        if planned is None:
            return None
        try:
            for original in planned.originals:
                self.store.put(planned.scope, original)
        except Exception:  # never break the agent: send the inputs as they were
            logger.exception("could not keep original tool inputs; inputs left as they are")
            return None
        return self._commit(planned)

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        planned = self._prepare(state)
        if planned is None:
            return None
        try:
            for original in planned.originals:
                await self.store.aput(planned.scope, original)
        except Exception:  # never break the agent: send the inputs as they were
            logger.exception("could not keep original tool inputs; inputs left as they are")
            return None
        return self._commit(planned)

    def _prepare(self, state: AgentState[Any]) -> _Planned | None:
        try:
            return self._plan(list(state.get("messages") or ()))
        except Exception:  # never break the agent
            logger.exception("tool-input shortening failed; inputs left as they are")
            return None

    def _plan(self, messages: list[AnyMessage]) -> _Planned | None:
        scope = thread_scope()
        turn = _last_ai(messages)
        if turn is None or scope is None:  # without a thread the originals could not be read
            return None
        index, message = turn
        if not message.id or not message.tool_calls or MARK in message.response_metadata:
            return None
        ids = [call.get("id") for call in message.tool_calls]
        if len(set(ids)) < len(ids):  # results could not be told apart: leave the turn alone
            return None
        answered = {m.tool_call_id for m in messages[index + 1 :] if isinstance(m, ToolMessage)}
        new_args: dict[str, dict[str, Any]] = {}
        originals: list[Original] = []
        cuts: list[CutArgument] = []
        for call in message.tool_calls:
            call_id = call.get("id") or ""
            if call["name"] in self.never or call_id not in answered:
                continue
            args, cut = shorten_arguments(
                call_id, call["args"], policy=self.policy, retrieval_tool=self._marker_tool
            )
            if cut:
                new_args[call_id] = args
                originals += [Original(c.handle, c.original, call["name"], call_id) for c in cut]
                cuts += cut
        if not cuts:
            return None
        return _Planned(_rewrite(message, new_args, cuts), originals, scope, len(new_args), cuts)

    def _commit(self, planned: _Planned) -> dict[str, Any]:
        with self._lock:
            self._stats = InputShorteningStats(
                self._stats.calls_shortened + planned.calls,
                self._stats.tokens_before + sum(c.tokens_before for c in planned.cuts),
                self._stats.tokens_after + sum(c.tokens_after for c in planned.cuts),
            )
        return {"messages": [planned.message]}


class _Planned(NamedTuple):
    message: AIMessage
    originals: list[Original]
    scope: str
    calls: int
    cuts: list[CutArgument]


def _last_ai(messages: Sequence[AnyMessage]) -> tuple[int, AIMessage] | None:
    """The newest assistant turn (the one the model has not been sent yet) and its index."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage):
            return index, message
    return None


def _rewrite(
    turn: AIMessage, new_args: dict[str, dict[str, Any]], cuts: list[CutArgument]
) -> AIMessage:
    """``turn`` with the cut calls' new arguments everywhere a provider could read them
    (``tool_calls``, Anthropic ``tool_use`` and v1 ``tool_call`` content blocks, OpenAI raw
    calls), the mark added, and every other field and call kept as it was."""
    update: dict[str, Any] = {
        "tool_calls": [
            {**c, "args": new_args[c["id"] or ""]} if c.get("id") in new_args else c
            for c in turn.tool_calls
        ],
        "response_metadata": {**turn.response_metadata, MARK: _mark(cuts)},
    }
    if isinstance(turn.content, list):
        update["content"] = [_block(b, new_args) for b in turn.content]
    raw = turn.additional_kwargs.get("tool_calls")
    if isinstance(raw, list):  # OpenAI-style raw calls
        update["additional_kwargs"] = {
            **turn.additional_kwargs,
            "tool_calls": [_raw_call(r, new_args) for r in raw],
        }
    return turn.model_copy(update=update)


def _mark(cuts: list[CutArgument]) -> dict[str, Any]:
    return {
        "handles": [c.handle for c in cuts],
        "tokens_before": sum(c.tokens_before for c in cuts),
        "tokens_after": sum(c.tokens_after for c in cuts),
    }


def _block(block: Any, new_args: dict[str, dict[str, Any]]) -> Any:
    if not isinstance(block, dict) or block.get("id") not in new_args:
        return block
    if block.get("type") == "tool_use":  # Anthropic-style
        return {**block, "input": new_args[block["id"]]}
    if block.get("type") == "tool_call":  # LangChain v1 standard block
        return {**block, "args": new_args[block["id"]]}
    return block


def _raw_call(raw: Any, new_args: dict[str, dict[str, Any]]) -> Any:
    if not isinstance(raw, dict) or raw.get("id") not in new_args:
        return raw
    function = dict(raw.get("function") or {})
    function["arguments"] = json.dumps(new_args[raw["id"]], ensure_ascii=False)
    return {**raw, "function": function}
