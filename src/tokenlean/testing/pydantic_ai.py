"""A recorded run replayed through a real pydantic-ai ``Agent`` (needs the ``pydantic-ai``
extra): the pieces the replay drives pydantic-ai with (:mod:`tokenlean.replay.pydantic_ai`),
for testing an agent stack. :func:`make_agent` wires a history processor the way the installed
pydantic-ai takes it; :func:`replay_agent` replays a recorded run and returns what the model
was sent on each call::

    calls = replay_agent(trajectory.messages, processor=history_processor())
    for call in calls:          # what the model saw, in the neutral view
        call.messages, call.tools, call.turn
"""

from __future__ import annotations

from tokenlean.replay.pydantic_ai import AT, PydanticCall, make_agent, replay_agent, to_pydantic

__all__ = ["AT", "PydanticCall", "make_agent", "replay_agent", "to_pydantic"]
