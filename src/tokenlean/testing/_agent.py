"""The scripted LangChain agent of :mod:`tokenlean.testing` (needs the ``langchain`` extra).

- :class:`ScriptedChatModel`: a chat model that replays given assistant turns and records exactly
  what it was sent (messages, bound tools, ``tool_choice``) — no mocks, no network;
- :func:`scripted_agent`: a real ``create_agent`` graph around one, with your middleware;
- :func:`prefix_breaks` and :func:`assert_prefix_kept`: which calls, if any, changed bytes the
  model had already been sent (each such call re-writes the provider's prompt cache).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokenlean import checks
from tokenlean.langchain import ViewCache, to_view
from tokenlean.replay import RecordedCall, ScriptedChatModel
from tokenlean.tokens import tool_schema_text
from tokenlean.transcript import canonical

# RecordedCall and ScriptedChatModel (the replay's) are re-exported for the package
__all__ = ["assert_prefix_kept", "prefix_breaks", "scripted_agent"]


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
