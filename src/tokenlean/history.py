"""The one adapter contract of the ways in that re-send a whole history, and the function that
runs a turn through it.

A way in (the raw provider bodies behind the proxy and the SDK wrappers, pydantic-ai's history
processor, AgentScope's middleware) implements :class:`HistoryAdapter`: read its native history
as neutral messages, say which planned edits it has a place for, and write edits back.
:func:`rewrite_history` does the rest, the same for every adapter: plan with the one
:class:`~tokenlean.pipeline.Planner`, keep the originals the markers point to (before any marker
names them), apply, and on any failure log it and leave the history as it came. An adapter is
only its translation; every decision is the planner's.

:func:`keeping` makes the choice of where originals go (a store a ``read_original`` tool reads,
``read_back="tool"``, or files the agent reads, ``"file"``) once for every adapter, and
:func:`read_back_answer` is what any adapter's ``read_original`` tool answers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, Literal, Protocol, TypeVar

from tokenlean._failopen import fail_open
from tokenlean.offering import Offer
from tokenlean.pipeline import HistoryEdit, HistoryPlan, Planner, PlannerSettings
from tokenlean.readback import FileReadBack, ToolReadBack
from tokenlean.settings import RawSettings
from tokenlean.shorten import readable
from tokenlean.store import (
    EvictingStore,
    FolderOriginalStore,
    InMemoryOriginalStore,
    Original,
    OriginalStore,
    StoreUnavailable,
    excerpt,
    put_all,
    retrieval_schema,
)
from tokenlean.tokens import (
    DEFAULT_COUNTER,
    memoized,
    tool_schema_text,
)
from tokenlean.transcript import Edit, Message

__all__ = [
    "SCOPE",
    "HistoryAdapter",
    "HistoryView",
    "Keeping",
    "Offer",
    "ReadBackMode",
    "Rewritten",
    "dropped",
    "keep",
    "keeping",
    "read_back_answer",
    "rewrite_history",
]

History = TypeVar("History")
View = TypeVar("View", bound="HistoryView")


class HistoryView(Protocol):
    """What an adapter reads a history as: the neutral messages (and, beside them, whatever it
    needs to find each message's place in its own objects)."""

    @property
    def messages(self) -> Sequence[Message]: ...


class HistoryAdapter(Protocol[History, View]):
    """The contract: a way in translates, and decides nothing."""

    def read(self, history: History) -> View | None:
        """The neutral view of ``history`` (``None``: nothing it can read)."""
        ...

    def writable(self, edit: Edit, view: View, history: History) -> bool:
        """Whether ``edit`` has a place to go in ``history``."""
        ...

    def apply(self, history: History, view: View, edits: Sequence[Edit]) -> History:
        """``history`` with ``edits`` written onto the parts they name."""
        ...


@dataclass(frozen=True, slots=True)
class Rewritten(Generic[History]):
    """A history with the edits written back, the whole plan, and the edits it had room for."""

    history: History
    plan: HistoryPlan
    written: tuple[HistoryEdit, ...]


def rewrite_history(
    adapter: HistoryAdapter[History, View],
    history: History,
    kept: Keeping,
    *,
    logger: logging.Logger,
    failure: tuple[str, ...],
    on_error: Callable[[], None] | None = None,
    offered: bool | None = None,
) -> Rewritten[History] | None:
    """Read, plan, keep the originals, apply; ``None`` when nothing changed or on a failure,
    which is logged as ``failure`` (the logger's message and its arguments) and leaves the
    history as it came. ``offered``: whether this request lists the ``read_original`` tool,
    when the adapter knows more than the history shows (``None``: :meth:`Keeping.offered`)."""
    message, *args = failure
    with fail_open(logger, message, *args, on_error=on_error):
        return _rewrite(adapter, history, kept, offered)
    return None


def _rewrite(
    adapter: HistoryAdapter[History, View], history: History, kept: Keeping, offered: bool | None
) -> Rewritten[History] | None:
    view = adapter.read(history)
    if view is None:
        return None
    if offered is None:
        offered = kept.offered(view.messages)
    planner = kept.planner if offered or kept.unoffered is None else kept.unoffered
    plan = planner.plan(view.messages)
    # an adapter gives a place to exactly what the core may edit; this guards that promise
    edits = tuple(e for e in plan.edits if adapter.writable(e.edit, view, history))
    if not edits:
        return None
    if not keep(kept.store, edits):  # before any marker names them
        return None  # not kept (the store logged why): no marker may name them
    return Rewritten(adapter.apply(history, view, [e.edit for e in edits]), plan, edits)


ReadBackMode = Literal["tool", "file"]
MODES: tuple[ReadBackMode, ...] = ("tool", "file")

#: The scope every original of these adapters is kept under: their histories carry no thread id
#: the tool could also see, and handles are digests of the call and the text, so conversations
#: sharing a store do not collide.
SCOPE = ""


@dataclass(frozen=True, slots=True)
class Keeping:
    """The planner, the store its originals go to (``None``: none kept), the store a
    ``read_original`` tool should read (``None``: no tool, markers name files or nothing) and,
    with a tool, when a run is offered it (``offer``; ``None``: always) and the planner of a
    run that is not (``unoffered``: its markers name no way back, so only what never needs
    recovering is cut)."""

    planner: Planner
    store: OriginalStore | None
    tool_store: OriginalStore | None
    offer: Offer | None = None
    unoffered: Planner | None = None

    def offered(self, messages: Sequence[Message], fixed: int = 0) -> bool:
        """Whether the run of ``messages`` is offered the tool (:class:`Offer`); the adapter
        lists it in the request exactly then."""
        return self.offer is None or self.offer.offered(messages, fixed)

    def forget(self) -> None:
        """Drop what the planners remember of histories planned (a cold plan equals a warm
        one; tests and benchmarks show it)."""
        self.planner.forget()
        if self.unoffered is not None:
            self.unoffered.forget()


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
    kept = store if store is not None else _tool_store(settings)
    planner = Planner(replace(base, read_back=ToolReadBack()))
    return Keeping(planner, kept, kept, _offer(base), Planner(replace(base, read_back=None)))


def _offer(policy: PlannerSettings) -> Offer:
    # memoised: the first prompt (a long system prompt) is counted again on every call
    counter = memoized(policy.counter or DEFAULT_COUNTER)
    return Offer(
        schema=counter.count(tool_schema_text([retrieval_schema()])),
        share=policy.outputs.start_share,
        always=policy.outputs.offer_tool == "always",
        counter=counter,
    )


def _tool_store(settings: RawSettings) -> OriginalStore:
    """The settings' server when they name one (shared with other processes), else memory."""
    return settings.store if settings.originals_url is not None else InMemoryOriginalStore()


def _folder(store: OriginalStore | None, settings: RawSettings) -> FolderOriginalStore:
    store = settings.store if store is None else store
    if not isinstance(store, FolderOriginalStore):
        raise ValueError(f'read_back="file" needs a FolderOriginalStore, got {store!r}')
    return store


def keep(store: OriginalStore | None, edits: Sequence[HistoryEdit]) -> bool:
    """Put the originals ``edits`` point to in ``store`` (``None``: none are kept); call it
    before writing the edits, so no marker is sent for an original that is not there. False
    when the store could not keep one (:class:`~tokenlean.store.StoreUnavailable`, which it
    logs once per outage): the history must then go as it came."""
    if store is None:
        return True
    try:
        put_all(store, SCOPE, [original for edit in edits for original in edit.originals])
    except StoreUnavailable:
        return False
    return True


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
