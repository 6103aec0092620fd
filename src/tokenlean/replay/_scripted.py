"""The scripted LangChain chat model the replay drives (and :mod:`tokenlean.testing` offers):
it replays given assistant turns and records exactly what it was sent (messages, bound tools,
``tool_choice``) — no mocks, no network.
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

from tokenlean.replay._script import Queued

__all__ = ["RecordedCall", "ScriptedChatModel"]


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


#: A scripted reply: the message, or a function of the messages received that builds it.
Reply = AIMessage | Callable[[list[BaseMessage]], AIMessage]


class ScriptedChatModel(Queued[Reply], BaseChatModel):
    """Returns the queued responses in order; when the queue is empty, an empty final answer.

    Calls answered from the queue are ``scripted``; the others are marked so that measurements
    can leave them out. ``responses`` may also hold callables that build the reply from the
    messages received, for tests that need to react to what the middleware did.
    """

    responses: list[Any] = Field(default_factory=list)
    #: Called with each call once it is answered (a replay measures it there, as it comes).
    on_call: Callable[[RecordedCall], None] | None = None
    #: False: a recorded call keeps its reply, tools and options but not its messages (which
    #: ``on_call`` has seen), so a long run holds no copy of every prompt.
    keep_messages: bool = True
    _queue: list[Reply] = PrivateAttr(default_factory=list)
    _calls: list[RecordedCall] = PrivateAttr(default_factory=list)
    _extra: int = PrivateAttr(default=0)

    def model_post_init(self, context: Any, /) -> None:
        self._queue = list(self.responses)

    @property
    def calls(self) -> list[RecordedCall]:
        return self._calls

    def _replies(self) -> list[Reply]:
        return self._queue

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
        if self.on_call is not None:
            self.on_call(call)
        if not self.keep_messages:
            call.messages = []
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
