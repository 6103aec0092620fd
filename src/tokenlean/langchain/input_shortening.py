"""Shorten the long inputs of tool calls at first sight, after the calls have run.

An assistant turn is first sent back to the model on the call after the one that produced it.
Before that call, :class:`ToolInputShorteningMiddleware` cuts each long string argument of the
turn's tool calls to its head and tail lines (see :mod:`tokenlean.arguments`) and writes the turn
back under the same id, so the model only ever sees the short form and every later request
repeats its bytes: no prompt-cache break. Originals go to the same store as
:class:`~tokenlean.langchain.shortening.ToolOutputShorteningMiddleware` uses, so its
``read_original`` tool can show them.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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
        tool_name: the retrieval tool's name, used in the omission marker.
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
        self.policy = ArgumentPolicy(min_tokens, head_lines, tail_lines)
        self.never = frozenset(never)
        self.store: OriginalStore = store if store is not None else InMemoryOriginalStore()
        self.tool_name = tool_name
        self.tools = [make_retrieval_tool(self.store, name=tool_name)] if retrieval_tool else []
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
        message, originals, scope = planned
        try:
            for original in originals:
                self.store.put(scope, original)
        except Exception:  # never break the agent: send the inputs as they were
            logger.exception("could not keep original tool inputs; inputs left as they are")
            return None
        return {"messages": [message]}

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        planned = self._prepare(state)
        if planned is None:
            return None
        message, originals, scope = planned
        try:
            for original in originals:
                await self.store.aput(scope, original)
        except Exception:  # never break the agent: send the inputs as they were
            logger.exception("could not keep original tool inputs; inputs left as they are")
            return None
        return {"messages": [message]}

    def _prepare(self, state: AgentState[Any]) -> tuple[AIMessage, list[Original], str] | None:
        try:
            return self._plan(list(state.get("messages") or ()))
        except Exception:  # never break the agent
            logger.exception("tool-input shortening failed; inputs left as they are")
            return None

    def _plan(self, messages: list[AnyMessage]) -> tuple[AIMessage, list[Original], str] | None:
        index = _last_ai(messages)
        scope = thread_scope()
        if index is None or scope is None:  # without a thread the originals could not be read
            return None
        turn = messages[index]
        assert isinstance(turn, AIMessage)  # _last_ai only returns assistant turns
        if not turn.id or not turn.tool_calls or MARK in turn.response_metadata:
            return None
        answered = {m.tool_call_id for m in messages[index + 1 :] if isinstance(m, ToolMessage)}
        calls, originals, cuts = [], [], []
        for call in turn.tool_calls:
            call_id = call.get("id") or ""
            if call["name"] in self.never or call_id not in answered:
                calls.append(call)
                continue
            args, cut = shorten_arguments(
                call_id, call["args"], policy=self.policy, retrieval_tool=self._tool()
            )
            calls.append({**call, "args": args})
            originals += [Original(c.handle, c.original, call["name"], call_id) for c in cut]
            cuts += cut
        if not cuts:
            return None
        self._count(cuts)
        return _rewrite(turn, calls, cuts), originals, scope

    def _tool(self) -> str | None:
        return self.tool_name if self.tools or self.tool_name != DEFAULT_TOOL_NAME else None

    def _count(self, cuts: list[CutArgument]) -> None:
        with self._lock:
            self._stats = InputShorteningStats(
                self._stats.calls_shortened + 1,
                self._stats.tokens_before + sum(c.tokens_before for c in cuts),
                self._stats.tokens_after + sum(c.tokens_after for c in cuts),
            )


def _last_ai(messages: Sequence[AnyMessage]) -> int | None:
    """The newest assistant turn: the one the model has not been sent yet."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AIMessage):
            return index
    return None


def _rewrite(turn: AIMessage, calls: list[Any], cuts: list[CutArgument]) -> AIMessage:
    """``turn`` with the new arguments everywhere a provider could read them, and the mark."""
    by_id = {c.get("id"): c for c in calls}
    content: Any = turn.content
    if isinstance(content, list):  # Anthropic-style tool_use blocks carry the input too
        content = [
            {**b, "input": by_id[b.get("id")]["args"]}
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") in by_id
            else b
            for b in content
        ]
    extra = dict(turn.additional_kwargs)
    if isinstance(extra.get("tool_calls"), list):  # OpenAI-style raw calls
        extra["tool_calls"] = [_raw_call(raw, by_id) for raw in extra["tool_calls"]]
    mark = {
        "handles": [c.handle for c in cuts],
        "tokens_before": sum(c.tokens_before for c in cuts),
        "tokens_after": sum(c.tokens_after for c in cuts),
    }
    return turn.model_copy(
        update={
            "tool_calls": calls,
            "content": content,
            "additional_kwargs": extra,
            "response_metadata": {**turn.response_metadata, MARK: mark},
        }
    )


def _raw_call(raw: Any, by_id: dict[Any, Any]) -> Any:
    if not isinstance(raw, dict) or raw.get("id") not in by_id:
        return raw
    function = dict(raw.get("function") or {})
    function["arguments"] = json.dumps(by_id[raw["id"]]["args"], ensure_ascii=False)
    return {**raw, "function": function}
