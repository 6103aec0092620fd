"""The raw-body rewrite measured on recorded runs, in the replay's own numbers.

A replay with no middleware gives the prompts an agent would have sent; each becomes a request
body (as a client speaking the API directly would send it, see :mod:`tokenlean.raw.bodies`),
goes through :func:`~tokenlean.raw.rewrite_request`, and is read back as the model would read
it. Every prompt, rewritten or not, is measured after that same round trip, so the raw rewrite,
no middleware and any middleware replay compare in one form (tokens sent, cache-aware billed
input, prefix breaks, reference recall).

The form every way in shares is :class:`CallPrompt`: what one model call was sent, in the
neutral view, and which recorded assistant turn answered it. A LangChain replay gives them with
:func:`call_prompts`; any other adapter's replay (pydantic-ai, AgentScope, a raw rewrite) builds
them itself, and :func:`measure_prompts` measures them all alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenlean.langchain import ViewCache, to_view
from tokenlean.raw import (
    Api,
    RawSettings,
    anthropic,
    gemini,
    openai_chat,
    openai_responses,
    rewrite_request,
)
from tokenlean.raw.bodies import body
from tokenlean.replay._engine import Replay, turn_messages
from tokenlean.replay._formats import Trajectory
from tokenlean.replay._metrics import PromptMeasurer, RunMetrics, measure_calls
from tokenlean.replay._refs import learned_references
from tokenlean.tokens import tool_schema_text
from tokenlean.transcript import Message

__all__ = ["CallPrompt", "call_prompts", "measure_bodies", "measure_prompts", "round_trip"]

_READ = {
    "anthropic": anthropic.read,
    "openai_chat": openai_chat.read,
    "openai_responses": openai_responses.read,
    "gemini": gemini.read,
}


@dataclass(frozen=True, slots=True)
class CallPrompt:
    """What one model call was sent, in the neutral view.

    ``tools`` are the tool schemas as LangChain binds them (``{"type": "function",
    "function": {"name", "description", "parameters"}}``); ``messages`` start with the system
    prompt when there is one; ``turn`` is the index (among the trajectory's assistant turns, in
    order) of the recorded turn that answered the call, ``None`` for a call the recording does
    not have (a nudge, a retry): such calls are not measured.
    """

    tools: tuple[Mapping[str, Any], ...]
    messages: tuple[Message, ...]
    turn: int | None


def call_prompts(trajectory: Trajectory, result: Replay) -> list[CallPrompt]:
    """The prompts of a LangChain replay's calls, each with the recorded turn that answered it."""
    index = {ai.id: i for i, ai in enumerate(turn_messages(trajectory.messages))}
    views = ViewCache()  # the calls share most of their messages: each is converted once
    return [
        CallPrompt(
            tools=tuple(call.tools),
            messages=tuple(to_view(call.messages, cache=views)),
            turn=index.get(call.response.id) if call.scripted and call.response else None,
        )
        for call in result.calls
    ]


def round_trip(
    api: Api, messages: Sequence[Message], settings: RawSettings | None = None
) -> tuple[Message, ...]:
    """``messages`` sent as one ``api`` body, rewritten when ``settings`` is given, and read
    back as the model reads them (the system prompt first, however the API carries it)."""
    request = body(api, messages)
    if settings is not None:
        rewritten = rewrite_request(api, request, settings=settings)
        request = rewritten.body if rewritten is not None else request
    read = _READ[api](request)
    if read is None:
        raise ValueError(f"{api} body of {len(messages)} messages could not be read back")
    system = [m for m in messages[:1] if m.role == "system"]
    if read.messages[:1] and read.messages[0].role == "system":
        system = []  # the API carries it among the messages (Chat Completions): read back
    return (*system, *read.messages)


def measure_prompts(
    trajectory: Trajectory,
    prompts: Sequence[CallPrompt],
    measurer: PromptMeasurer,
    *,
    strategy: str,
    api: Api | None = "anthropic",
    settings: RawSettings | None = None,
    tools_from: Sequence[CallPrompt] | None = None,
) -> RunMetrics:
    """Metrics of the calls answered by a recorded turn, each prompt sent as an ``api`` body
    (rewritten when ``settings`` is given; ``api=None``: measured as given, e.g. prompts a
    caller already sent through :func:`round_trip`). ``tools_from`` measures the tool schemas
    of another replay's calls instead (to tell what an adapter's own tool costs from what it
    saves)."""
    scripted = [p for p in prompts if p.turn is not None]
    schemas = [p for p in (tools_from or prompts) if p.turn is not None]
    measured = [
        measurer.measure(
            tool_schema_text(schema.tools),
            p.messages if api is None else round_trip(api, p.messages, settings),
        )
        for p, schema in zip(scripted, schemas, strict=True)
    ]
    learned = [t.refs for t in learned_references(trajectory.messages)]  # one per turn
    refs = [learned[p.turn] if p.turn is not None else frozenset() for p in scripted]
    written = measurer.outputs(trajectory.messages)
    outputs = [written[p.turn] if p.turn is not None else 0 for p in scripted]
    run = RunMetrics(strategy=strategy, trajectory=trajectory.id, source=trajectory.source_name)
    run.add_calls(measure_calls(measured, refs, outputs))
    run.extra_calls = len(prompts) - len(scripted)
    return run


def measure_bodies(
    trajectory: Trajectory,
    result: Replay,
    measurer: PromptMeasurer,
    *,
    strategy: str,
    api: Api = "anthropic",
    settings: RawSettings | None = None,
    tools_from: Replay | None = None,
) -> RunMetrics:
    """Metrics of ``result``'s prompts sent as ``api`` bodies, rewritten when ``settings`` is
    given. ``tools_from`` measures the tool schemas of another replay's calls instead (to tell
    what a middleware's own tool costs from what its rewrite saves)."""
    schemas = call_prompts(trajectory, tools_from) if tools_from is not None else None
    return measure_prompts(
        trajectory,
        call_prompts(trajectory, result),
        measurer,
        strategy=strategy,
        api=api,
        settings=settings,
        tools_from=schemas,
    )
