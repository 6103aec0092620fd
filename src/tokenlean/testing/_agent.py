"""The scripted LangChain agent of :mod:`tokenlean.testing` (needs the ``langchain`` extra).

- :class:`ScriptedChatModel`: a chat model that replays given assistant turns and records exactly
  what it was sent (messages, bound tools, ``tool_choice``) — no mocks, no network;
- :func:`scripted_agent`: a real ``create_agent`` graph around one, with your middleware;
- :func:`prefix_breaks` and :func:`assert_prefix_kept`: which calls, if any, changed bytes the
  model had already been sent (each such call re-writes the provider's prompt cache).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

from tokenlean import checks
from tokenlean.langchain._adapter import ViewCache, to_view
from tokenlean.tokens import tool_schema_text
from tokenlean.transcript import canonical

__all__ = [
    "RecordedCall",
    "ScriptedChatModel",
    "assert_prefix_kept",
    "prefix_breaks",
    "scripted_agent",
]


@dataclass
class RecordedCall:
    """One model call as the model received it."""

    messages: list[BaseMessage]
    tools: list[dict[str, Any]]
    tool_choice: Any
    kwargs: dict[str, Any]
    started: float
    scripted: bool = True
    response: AIMessage | None = field(default=None, repr=False)


class ScriptedChatModel(BaseChatModel):
    """Returns the queued responses in order; when the queue is empty, an empty final answer.

    Calls answered from the queue are ``scripted``; the others are marked so that measurements
    can leave them out. ``responses`` may also hold callables that build the reply from the
    messages received, for tests that need to react to what the middleware did.
    """

    responses: list[Any] = Field(default_factory=list)
    _queue: list[AIMessage | Callable[[list[BaseMessage]], AIMessage]] = PrivateAttr(
        default_factory=list
    )
    _calls: list[RecordedCall] = PrivateAttr(default_factory=list)
    _extra: int = PrivateAttr(default=0)

    def model_post_init(self, context: Any, /) -> None:
        self._queue = list(self.responses)

    @property
    def calls(self) -> list[RecordedCall]:
        return self._calls

    def push(self, *responses: AIMessage | Callable[[list[BaseMessage]], AIMessage]) -> None:
        """Queue more responses (the replay engine queues one user turn's worth at a time)."""
        self._queue.extend(responses)

    @property
    def pending(self) -> int:
        return len(self._queue)

    def clear_pending(self) -> int:
        """Drop queued responses (returns how many were dropped)."""
        dropped = len(self._queue)
        self._queue.clear()
        return dropped

    @property
    def _llm_type(self) -> str:
        return "tokenlean-scripted"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        started = time.perf_counter()
        tools = list(kwargs.pop("tools", None) or [])
        tool_choice = kwargs.pop("tool_choice", None)
        call = RecordedCall(list(messages), tools, tool_choice, dict(kwargs), started)
        if self._queue:
            head = self._queue.pop(0)
            reply = head if isinstance(head, AIMessage) else head(list(messages))
        else:
            self._extra += 1
            call.scripted = False
            reply = AIMessage(content="", id=f"scripted-extra-{self._extra}")
        call.response = reply
        self._calls.append(call)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop, None, **kwargs)


def scripted_agent(
    responses: Sequence[Any],
    *,
    tools: Sequence[Any] = (),
    middleware: Sequence[Any] = (),
    checkpointer: Any = None,
    system_prompt: str | None = None,
    **kwargs: Any,
) -> tuple[Any, ScriptedChatModel]:
    """A real ``create_agent`` graph driven by a :class:`ScriptedChatModel`; returns both.

    ``responses`` are the assistant turns (or callables building one from the messages
    received); ``checkpointer`` defaults to an in-memory one, so runs need a ``thread_id``.
    """
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    checks.sequence(responses, "responses", of="AIMessages or functions building one")
    checks.sequence(tools, "tools", of="tools")
    checks.sequence(middleware, "middleware", of="AgentMiddleware")
    model = ScriptedChatModel(responses=list(responses))
    agent = create_agent(
        model,
        tools=list(tools),
        middleware=list(middleware),
        system_prompt=system_prompt,
        checkpointer=checkpointer if checkpointer is not None else InMemorySaver(),
        **kwargs,
    )
    return agent, model


def _blocks(call: RecordedCall, views: ViewCache) -> list[str]:
    """A call's prompt as the provider receives it: tool schemas, then each message's bytes."""
    messages = to_view(call.messages, cache=views)
    return [tool_schema_text(call.tools), *(canonical(m) for m in messages)]


def prefix_breaks(calls: ScriptedChatModel | Sequence[RecordedCall]) -> list[tuple[int, int]]:
    """``(call, message)`` for every call whose prompt does not start with the previous call's.

    ``message`` is the index of the first message that differs (``-1``: the tool schemas).
    """
    recorded = _recorded(calls)
    breaks: list[tuple[int, int]] = []
    previous: list[str] | None = None
    views = ViewCache()  # the calls share most of their messages: each is converted once
    for index, call in enumerate(recorded):
        blocks = _blocks(call, views)
        if previous is not None:
            same = next(
                (i for i, (a, b) in enumerate(zip(previous, blocks, strict=False)) if a != b),
                min(len(previous), len(blocks)),
            )
            if same < len(previous):
                breaks.append((index, same - 1))  # block 0 is the tool schemas
        previous = blocks
    return breaks


def _recorded(calls: object) -> list[RecordedCall]:
    """The calls recorded by a :class:`ScriptedChatModel`, or the given list of them."""
    if isinstance(calls, ScriptedChatModel):
        made: list[RecordedCall] = calls.calls
        return made
    recorded: list[RecordedCall] = list(
        checks.sequence(calls, "calls", of="RecordedCalls (or a ScriptedChatModel)")
    )
    odd = [c for c in recorded if not isinstance(c, RecordedCall)]
    if odd:
        raise checks.ArgumentTypeError(
            f"calls must hold RecordedCalls only, got {checks.described(odd[0])}"
        )
    return recorded


def assert_prefix_kept(
    calls: ScriptedChatModel | Sequence[RecordedCall], *, allowed: Sequence[int] = ()
) -> None:
    """Fail unless every call's prompt starts with the previous call's prompt, byte for byte.

    ``allowed`` lists the calls (0-based) expected to break it (a context editor's edits, say);
    those must break it, and no other call may.
    """
    for index in checks.sequence(allowed, "allowed", of="call numbers"):
        checks.integer(index, "allowed[]", at_least=0)
    found = prefix_breaks(calls)
    at = [call for call, _ in found]
    if sorted(at) != sorted(allowed):
        detail = ", ".join(f"call {c} at message {m}" for c, m in found) or "none"
        raise AssertionError(f"prefix breaks {detail}; expected at calls {list(allowed)}")
