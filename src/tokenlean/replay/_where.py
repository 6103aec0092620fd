"""The prompts of a run without middleware, as parts (:mod:`tokenlean.replay._parts`): what
"where the money went" splits. The run is replayed and measured exactly as the ``none`` row
of a replay is (:func:`tokenlean.replay._engine.measure_replay`), so its parts add up to that
row's bill."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack

from tokenlean.replay._formats import Trajectory
from tokenlean.replay._parts import SCHEMAS, CallParts, part_of

__all__ = ["none_parts", "parts_by_trajectory"]


def none_parts(trajectory: Trajectory) -> list[CallParts]:
    """Each call of ``trajectory`` replayed with no middleware, as blocks and their parts."""
    from tokenlean.langchain import ViewCache, to_view
    from tokenlean.replay._engine import replay, turn_messages
    from tokenlean.replay._metrics import _common_prefix
    from tokenlean.replay._runner import shared_measurer
    from tokenlean.tokens import tool_schema_text

    measurer = shared_measurer()
    names = {c.id: c.name for m in trajectory.messages for c in m.tool_calls if c.id}
    ids = [ai.id for ai in turn_messages(trajectory.messages)]
    outputs = dict(zip(ids, measurer.outputs(trajectory.messages), strict=True))
    views = ViewCache()
    out: list[CallParts] = []
    previous: tuple[str, ...] = ()
    for call in (c for c in replay(trajectory).calls if c.scripted):
        messages = to_view(call.messages, cache=views)
        prompt = measurer.measure(tool_schema_text(call.tools), messages)
        same = _common_prefix(previous, prompt.blocks)
        answered = call.response.id if call.response else None
        out.append(
            CallParts(
                tokens=prompt.tokens,
                parts=(SCHEMAS, *(part_of(m, names) for m in messages)),
                cached=sum(prompt.tokens[:same]),
                output=outputs.get(answered, 0),
            )
        )
        previous = prompt.blocks
    return out


def _safe_parts(trajectory: Trajectory) -> list[CallParts] | None:
    try:
        return none_parts(trajectory)
    except Exception:  # the none row says what failed; its parts are then left out, not guessed
        return None


def parts_by_trajectory(
    trajectories: Sequence[Trajectory],
    *,
    jobs: int = 1,
    done: Callable[[Trajectory], None] | None = None,
) -> dict[str, list[CallParts]]:
    """:func:`none_parts` of each trajectory by its id (one that fails is left out), in
    ``jobs`` processes; ``done`` is told of each trajectory measured."""
    out: dict[str, list[CallParts]] = {}
    with ExitStack() as stack:
        if jobs > 1 and len(trajectories) > 1:
            pool = stack.enter_context(ProcessPoolExecutor(max_workers=jobs))
            found: Iterable[list[CallParts] | None] = pool.map(_safe_parts, trajectories)
        else:
            found = map(_safe_parts, trajectories)
        for trajectory, parts in zip(trajectories, found, strict=True):
            if parts is not None:
                out[trajectory.id] = parts
            if done is not None:
                done(trajectory)
    return out
