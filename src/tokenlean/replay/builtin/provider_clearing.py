"""Replay strategies for the provider's own clearing: Anthropic's ``clear_tool_uses_20250919``.

The edit happens at the provider, so each is replayed as a request-only transform: the calls of a
LangChain replay (with no middleware, or with tokenlean's recommended stack) are what the client
sends, and each call's prompt goes through :func:`tokenlean.provider_clearing.clear_tool_uses`,
the prompt the model reads and the cache matches on. Measured like every strategy, against the
same ``none``:

- ``anthropic-clear-tool-uses``: the API's defaults (trigger 100k input tokens, keep 3);
- ``anthropic-clear-tool-uses-30k``: trigger 30k, keep 3. 30k because the recorded runs here end
  below 100k tokens (the default trigger never fires on them), and it is both the trigger of
  Anthropic's own configuration example and the default trigger of tokenlean's context editor,
  so the two compare at the same trigger;
- ``recommended+anthropic-clear-tool-uses`` and ``recommended+anthropic-clear-tool-uses-30k``:
  ``recommended_middleware("anthropic")``, then the server's edit on what it sends.

Server-side compaction (Anthropic's ``compact_20260112``, OpenAI's Responses compaction) is not
replayed: its summary is written by a model, which no offline function reproduces faithfully.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tokenlean.provider_clearing import ClearToolUses, clear_tool_uses
from tokenlean.replay._strategies import register_way_in
from tokenlean.tokens import memoized

if TYPE_CHECKING:  # LangChain's replay is imported when a strategy runs (the replay extra)
    from tokenlean.replay._formats import Trajectory
    from tokenlean.replay._raw import CallPrompt

__all__ = [
    "DEFAULTS",
    "LOWER",
    "LOWER_TRIGGER",
    "plain_calls",
    "recommended_calls",
    "server_cleared",
]

#: The trigger of the lower variant (see the module's docstring for why 30k).
LOWER_TRIGGER = 30_000
DEFAULTS = ClearToolUses()
LOWER = ClearToolUses(trigger=LOWER_TRIGGER)

Calls = Callable[["Trajectory"], Sequence["CallPrompt"]]


def plain_calls(trajectory: Trajectory) -> Sequence[CallPrompt]:
    """What a client with no middleware sends on each call."""
    from tokenlean.replay.builtin.ways_in import plain

    return plain(trajectory)


def recommended_calls(trajectory: Trajectory) -> Sequence[CallPrompt]:
    """What a client with ``recommended_middleware("anthropic")`` sends on each call."""
    from tokenlean.langchain.recommended import recommended_middleware
    from tokenlean.replay._engine import replay
    from tokenlean.replay._raw import call_prompts

    return call_prompts(trajectory, replay(trajectory, recommended_middleware("anthropic")))


def server_cleared(settings: ClearToolUses, sent: Calls) -> Callable[[Trajectory], list[Any]]:
    """The way in: each call ``sent`` makes, as the model reads it after the server's edit
    (the trigger counted with the replay's own counter, so it is judged on the figure the
    report prints)."""

    def run(trajectory: Trajectory) -> list[CallPrompt]:
        from tokenlean.replay._raw import CallPrompt
        from tokenlean.replay._runner import shared_measurer

        counter = memoized(shared_measurer().counter)  # each call re-counts the history

        def read(p: CallPrompt) -> CallPrompt:
            cleared = clear_tool_uses(p.messages, tools=p.tools, settings=settings, counter=counter)
            return CallPrompt(p.tools, cleared.messages, p.turn)

        return [read(p) for p in sent(trajectory)]

    return run


_VARIANTS = {
    "anthropic-clear-tool-uses": (DEFAULTS, "trigger 100k input tokens, keep 3 (the defaults)"),
    "anthropic-clear-tool-uses-30k": (LOWER, "trigger 30k input tokens, keep 3"),
}
for _name, (_settings, _what) in _VARIANTS.items():
    register_way_in(
        _name,
        server_cleared(_settings, plain_calls),
        f"Anthropic's server-side clear_tool_uses_20250919, {_what}",
        needs="langchain",  # the client's calls are LangChain's, replayed
    )
    register_way_in(
        f"recommended+{_name}",
        server_cleared(_settings, recommended_calls),
        f"recommended_middleware('anthropic'), then the server's clearing ({_what})",
        needs="langchain",
    )
