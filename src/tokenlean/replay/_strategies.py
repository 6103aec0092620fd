"""Named strategies: a middleware stack the replay can build fresh for every trajectory.

Register one with :func:`register`; later middleware and peer libraries plug in with a few lines::

    from tokenlean.replay._strategies import register

    register("my-stack", lambda: [MyMiddleware(threshold=2000)], "my middleware at 2k")

A strategy whose factory raises ``ImportError`` (an optional package missing) is reported as
unavailable instead of failing the replay.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Factory = Callable[[], list[Any]]


@dataclass(frozen=True, slots=True)
class Strategy:
    name: str
    factory: Factory
    description: str = ""
    default: bool = True  # replayed when no strategy is named

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
]


def register(name: str, factory: Factory, description: str = "", *, default: bool = True) -> None:
    """Add (or replace) a named strategy."""
    if not name or any(ch.isspace() for ch in name):
        raise ValueError(f"strategy names are non-empty and have no spaces, got {name!r}")
    _REGISTRY[name] = Strategy(name, factory, description, default)


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
