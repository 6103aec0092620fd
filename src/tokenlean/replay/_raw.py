"""The raw-body rewrite measured on recorded runs, in the replay's own numbers.

A replay with no middleware gives the prompts an agent would have sent; each becomes a request
body (as a client speaking the API directly would send it, see :mod:`tokenlean.testing.bodies`),
goes through :func:`~tokenlean.raw.rewrite_request`, and is read back as the model would read
it. Every prompt, rewritten or not, is measured after that same round trip, so the raw rewrite,
no middleware and any middleware replay compare in one form (tokens sent, cache-aware billed
input, prefix breaks, reference recall).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokenlean.langchain._adapter import ViewCache, to_view
from tokenlean.raw import (
    Api,
    RawSettings,
    anthropic,
    gemini,
    openai_chat,
    openai_responses,
    rewrite_request,
)
from tokenlean.replay._engine import Replay, turn_messages
from tokenlean.replay._formats import Trajectory
from tokenlean.replay._metrics import Prompt, PromptMeasurer, RunMetrics, measure_calls
from tokenlean.replay._refs import learned_references
from tokenlean.testing import RecordedCall
from tokenlean.testing.bodies import body
from tokenlean.tokens import tool_schema_text
from tokenlean.transcript import Message

__all__ = ["measure_bodies"]

_READ = {
    "anthropic": anthropic.read,
    "openai_chat": openai_chat.read,
    "openai_responses": openai_responses.read,
    "gemini": gemini.read,
}


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
    scripted = [c for c in result.calls if c.scripted]
    schemas = [c for c in (tools_from or result).calls if c.scripted]
    views = ViewCache()  # the calls share most of their messages: each is converted once
    prompts = [
        _prompt(call, schema.tools, measurer, api, settings, views)
        for call, schema in zip(scripted, schemas, strict=True)
    ]
    run = RunMetrics(strategy=strategy, trajectory=trajectory.id)
    run.add_calls(measure_calls(prompts, _turn_refs(trajectory, scripted)))
    return run


def _prompt(
    call: RecordedCall,
    tools: Sequence[dict[str, Any]],
    measurer: PromptMeasurer,
    api: Api,
    settings: RawSettings | None,
    views: ViewCache,
) -> Prompt:
    view = to_view(call.messages, cache=views)
    system = [m for m in view[:1] if m.role == "system"]
    request = body(api, view)
    if settings is not None:
        rewritten = rewrite_request(api, request, settings=settings)
        request = rewritten.body if rewritten is not None else request
    read = _READ[api](request)
    if read is None:
        raise ValueError(f"{api} body of {len(view)} messages could not be read back")
    messages: list[Message] = [*system, *read.messages]
    return measurer.measure(tool_schema_text(tools), messages)


def _turn_refs(trajectory: Trajectory, scripted: Sequence[RecordedCall]) -> list[frozenset[str]]:
    learned = learned_references(trajectory.messages)  # one per assistant turn, in order
    by_id = {
        ai.id: turn.refs
        for ai, turn in zip(turn_messages(trajectory.messages), learned, strict=True)
    }
    return [by_id.get(c.response.id if c.response else None, frozenset()) for c in scripted]
