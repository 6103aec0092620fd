"""Named strategies: a middleware stack the replay can build fresh for every trajectory.

Register one with :func:`register`; later middleware and peer libraries plug in with a few lines::

    from tokenlean.replay import register

    register("my-stack", lambda: [MyMiddleware(threshold=2000)], "my middleware at 2k")

A way in that is not LangChain middleware (pydantic-ai, AgentScope, the raw rewrite, one of
your own) registers how it replays a recorded run instead, with :func:`register_way_in`: a
function from a :class:`~tokenlean.replay.Trajectory` to what the model was sent on each call
(:class:`~tokenlean.replay.CallPrompt`). The replay measures its calls as it measures a
LangChain stack's, against the same ``none``.

A strategy whose factory raises ``ImportError`` (an optional package missing) is reported as
unavailable instead of failing the replay.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tokenlean.replay._formats import Trajectory
    from tokenlean.replay._raw import CallPrompt

__all__ = [
    "BASELINE",
    "BUILTIN_MODULES",
    "Factory",
    "Strategy",
    "all_strategies",
    "default_names",
    "get",
    "load_plugins",
    "middleware",
    "register",
    "register_way_in",
]

Factory = Callable[[], list[Any]]
#: A way in's replay of one recorded run: what the model was sent on each call.
WayIn = Callable[["Trajectory"], Sequence["CallPrompt"]]


@dataclass(frozen=True, slots=True)
class Strategy:
    name: str
    factory: Factory
    description: str = ""
    default: bool = True  # replayed when no strategy is named
    way_in: WayIn | None = None  # a way in replayed by itself (``factory`` only probes it)

    def available(self) -> bool:
        try:
            self.factory()
        except ImportError:
            return False
        return True


_REGISTRY: dict[str, Strategy] = {}
BASELINE = "none"

#: Modules that register built-in strategies when imported (kept lazy so the core stays light).
BUILTIN_MODULES: list[str] = [
    "tokenlean.replay.builtin.token_saving",
    "tokenlean.replay.builtin.output_shortening",
    "tokenlean.replay.builtin.input_shortening",
    "tokenlean.replay.builtin.context_editor",
    "tokenlean.replay.builtin.budget",
    "tokenlean.replay.builtin.loop_guard",
    "tokenlean.replay.builtin.recommended",
    "tokenlean.replay.builtin.ways_in",
    "tokenlean.replay.builtin.provider_clearing",
]


def register(
    name: str,
    factory: Factory,
    description: str = "",
    *,
    default: bool = True,
    way_in: WayIn | None = None,
) -> None:
    """Add (or replace) a named strategy (``way_in``: see :func:`register_way_in`)."""
    if not name or any(ch.isspace() for ch in name):
        raise ValueError(f"strategy names are non-empty and have no spaces, got {name!r}")
    _REGISTRY[name] = Strategy(name, factory, description, default, way_in)


def middleware(target: str, **options: Any) -> Factory:
    """The factory of ``[Middleware(**options)]`` for ``target``, ``"module:Middleware"``,
    imported when a replay builds it (an extra that is missing makes the strategy unavailable,
    not the replay fail)."""
    module, _, name = target.partition(":")

    def build() -> list[Any]:
        return [getattr(importlib.import_module(module), name)(**options)]

    return build


def register_way_in(
    name: str, way_in: WayIn, description: str = "", *, needs: str, default: bool = False
) -> None:
    """Add (or replace) a strategy replayed through a way in of its own; ``needs`` names the
    module it cannot run without (the strategy is unavailable where it is missing)."""

    def probe() -> list[Any]:
        importlib.import_module(needs)
        return []

    register(name, probe, description, default=default, way_in=way_in)


def load_plugins(modules: Iterable[str] = ()) -> None:
    """Import the built-in strategy modules and any named plugin modules (idempotent)."""
    for module in BUILTIN_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:  # a real missing dependency inside the module: report it
                raise
    cwd = str(Path.cwd())
    if modules and "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)  # plugins are named like `python -m` would find them
    for module in modules:
        importlib.import_module(module)


def get(name: str) -> Strategy:
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"unknown strategy {name!r}; known: {known}") from None


def all_strategies() -> list[Strategy]:
    return list(_REGISTRY.values())


def default_names() -> list[str]:
    """The baseline first, then every default strategy whose dependencies are installed."""
    names = [BASELINE]
    names += [
        s.name for s in _REGISTRY.values() if s.default and s.name != BASELINE and s.available()
    ]
    return names


register(BASELINE, list, "no middleware (the baseline every ratio is against)")
