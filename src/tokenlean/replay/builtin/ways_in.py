"""Replay strategies that are other ways in than LangChain middleware, each replayed through
its own framework's real agent loop (or, for the raw rewrite, as request bodies), measured
against the same ``none`` as the LangChain stacks:

- ``pydantic-ai``: :func:`tokenlean.pydantic_ai.history_processor` in a real pydantic-ai
  ``Agent`` (:mod:`tokenlean.replay.pydantic_ai`);
- ``agentscope``: :func:`tokenlean.agentscope.recommended_middleware` in a real AgentScope
  ``Agent`` (:mod:`tokenlean.replay.agentscope`);
- ``raw-<api>``: the no-middleware prompts of each call sent as that API's request body
  through :func:`tokenlean.raw.rewrite_request` (what the proxy, the SDK wrappers and
  ``tokenlean.litellm`` do), read back with the API's own reader.

None is replayed by default: ``tokenlean replay -s none -s pydantic-ai`` names them.
``benchmarks/adapters.py`` measures each against its own framework with no tokenlean.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tokenlean.raw import Api, RawSettings
from tokenlean.replay._strategies import register_way_in

if TYPE_CHECKING:  # LangChain's replay is imported when a strategy runs (the replay extra)
    from tokenlean.replay._formats import Trajectory
    from tokenlean.replay._raw import CallPrompt

__all__ = ["APIS", "agentscope", "plain", "pydantic_ai", "raw"]

APIS: tuple[Api, ...] = ("anthropic", "openai_chat", "openai_responses", "gemini")


def pydantic_ai(trajectory: Trajectory) -> list[CallPrompt]:
    from tokenlean.pydantic_ai import history_processor
    from tokenlean.replay.pydantic_ai import call_prompts as pydantic_calls

    return pydantic_calls(trajectory, history_processor())


def agentscope(trajectory: Trajectory) -> list[CallPrompt]:
    from tokenlean.agentscope import recommended_middleware
    from tokenlean.replay.agentscope import call_prompts as agentscope_calls

    return agentscope_calls(trajectory, recommended_middleware("anthropic"))


#: The last trajectory's plain calls: the four raw strategies replay one run after another.
_PLAIN: dict[str, tuple[CallPrompt, ...]] = {}


def plain(trajectory: Trajectory) -> tuple[CallPrompt, ...]:
    """The calls of a real ``create_agent`` with no middleware."""
    from tokenlean.replay._engine import replay
    from tokenlean.replay._raw import call_prompts

    calls = _PLAIN.get(trajectory.id)
    if calls is None:
        _PLAIN.clear()
        calls = _PLAIN[trajectory.id] = tuple(call_prompts(trajectory, replay(trajectory, [])))
    return calls


def raw(api: Api, originals: Path | None = None) -> Callable[[Trajectory], list[CallPrompt]]:
    """The rewrite of ``api`` bodies; markers name files in ``originals`` (default: a folder
    of this process's temporary directory, so a replay leaves the user's cache alone)."""

    def rewrite(trajectory: Trajectory) -> list[CallPrompt]:
        from tokenlean.replay._raw import CallPrompt, round_trip

        folder = originals or Path(tempfile.gettempdir()) / "tokenlean-replay-originals"
        settings = RawSettings(originals_dir=folder)  # a fresh planner per run
        return [
            CallPrompt(p.tools, round_trip(api, p.messages, settings), p.turn)
            for p in plain(trajectory)
            if p.turn is not None  # the calls measured (the rewrite is stateless)
        ]

    return rewrite


register_way_in(
    "pydantic-ai",
    pydantic_ai,
    "pydantic-ai: history_processor() in a real Agent",
    needs="pydantic_ai",
)
register_way_in(
    "agentscope",
    agentscope,
    "AgentScope: recommended_middleware('anthropic') in a real Agent",
    needs="agentscope",
)
for _api in APIS:
    register_way_in(
        f"raw-{_api.replace('_', '-')}",
        raw(_api),
        f"the raw rewrite of {_api} bodies (proxy, SDK wrappers, LiteLLM)",
        needs="langchain",  # the raw rows replay LangChain's calls as bodies
    )
