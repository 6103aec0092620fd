"""What the history-processing adapters share: a planner, where its originals go, and the
answer of their ``read_original`` tool.

pydantic-ai's history processor and the AgentScope middleware both plan a whole history with
the one :class:`~tokenlean.pipeline.Planner` under :class:`~tokenlean.raw.RawSettings`, and keep
the originals its markers name either in a store their own retrieval tool reads
(``read_back="tool"``) or as files the agent reads (``read_back="file"``). :func:`keeping` makes
that choice once for both; :func:`read_back_answer` is what either tool answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from tokenlean.pipeline import HistoryEdit, Planner, PlannerSettings
from tokenlean.raw import RawSettings
from tokenlean.readback import FileReadBack, ToolReadBack
from tokenlean.shorten._wrapped import readable
from tokenlean.store import (
    EvictingStore,
    FolderOriginalStore,
    InMemoryOriginalStore,
    Original,
    OriginalStore,
    excerpt,
)

__all__ = [
    "SCOPE",
    "Keeping",
    "ReadBackMode",
    "dropped",
    "keep",
    "keeping",
    "read_back_answer",
]

ReadBackMode = Literal["tool", "file"]
MODES: tuple[ReadBackMode, ...] = ("tool", "file")

#: The scope every original of these adapters is kept under: their histories carry no thread id
#: the tool could also see, and handles are digests of the call and the text, so conversations
#: sharing a store do not collide.
SCOPE = ""


@dataclass(frozen=True, slots=True)
class Keeping:
    """The planner, the store its originals go to (``None``: none kept), and the store a
    ``read_original`` tool should read (``None``: no tool, markers name files or nothing)."""

    planner: Planner
    store: OriginalStore | None
    tool_store: OriginalStore | None


def keeping(
    settings: RawSettings | None,
    store: OriginalStore | None,
    read_back: ReadBackMode,
    *,
    policy: PlannerSettings | None = None,
) -> Keeping:
    """Validate the arguments and make the choice (module docstring). ``policy`` replaces
    ``settings.policy()`` (its read-back is set here)."""
    settings = settings if settings is not None else RawSettings()
    if not isinstance(settings, RawSettings):
        raise ValueError(f"settings must be a RawSettings, got {settings!r}")
    if read_back not in MODES:
        raise ValueError(f"read_back must be one of {MODES}, got {read_back!r}")
    if store is not None and not isinstance(store, OriginalStore):
        raise ValueError(f"store must be an OriginalStore (put/get), got {store!r}")
    base = policy if policy is not None else settings.policy()
    if not settings.keep_originals:
        return Keeping(Planner(replace(base, read_back=None)), None, None)
    if read_back == "file":
        folder = _folder(store, settings)
        return Keeping(Planner(replace(base, read_back=FileReadBack(folder))), folder, None)
    kept = store if store is not None else InMemoryOriginalStore()
    return Keeping(Planner(replace(base, read_back=ToolReadBack())), kept, kept)


def _folder(store: OriginalStore | None, settings: RawSettings) -> FolderOriginalStore:
    if store is None:
        return settings.store
    if not isinstance(store, FolderOriginalStore):
        raise ValueError(f'read_back="file" needs a FolderOriginalStore, got {store!r}')
    return store


def keep(store: OriginalStore | None, edits: Sequence[HistoryEdit]) -> None:
    """Put the originals ``edits`` point to in ``store`` (``None``: none are kept); call it
    before writing the edits, so no marker is sent for an original that is not there."""
    if store is None:
        return
    for edit in edits:
        for original in edit.originals:
            store.put(SCOPE, original)


def dropped(store: OriginalStore, handle: str) -> bool:
    """Whether ``store`` kept ``handle`` once and dropped it to bound its size (memory cap,
    or a folder's sweeps); a store that cannot tell says no."""
    return isinstance(store, EvictingStore) and store.evicted(SCOPE, handle.strip())


def read_back_answer(
    found: Original | None, handle: str, lines: str, pattern: str, *, evicted: bool = False
) -> str:
    """What ``read_original(handle, lines, pattern)`` answers given the original ``found``
    under ``handle``: the lines the markers count (a JSON envelope's text, as they count them),
    a range, or the lines matching a pattern. ``evicted``: none was found because the store
    dropped it (:func:`dropped`), which the answer says, so the agent reruns what made it."""
    if found is None and evicted:
        return (
            f"The original {handle.strip()!r} was dropped to bound the store's size; only the "
            "shortened text is left (rerun the command to see its output again)."
        )
    if found is None:
        return f"No original with handle {handle.strip()!r} is kept."
    try:
        return excerpt(readable(found.text), lines=lines or None, pattern=pattern or None)
    except ValueError as exc:
        return str(exc)
