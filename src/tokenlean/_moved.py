"""Module paths that moved, kept importable for a while with a ``DeprecationWarning``.

Internal modules became private (``tokenlean.shorten.options`` is now
``tokenlean.shorten._options``; import its names from ``tokenlean.shorten``), and a few moved
to the layer they belong to (``tokenlean.raw.build`` is ``tokenlean.testing.bodies``). An import
of an old path gets a stand-in module that reads every attribute from the new one. The finder
sits at the end of ``sys.meta_path``, so only imports that would otherwise fail reach it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from collections.abc import Sequence

__all__ = ["MOVED", "install"]

#: Old module path -> where it lives now.
MOVED: dict[str, str] = {
    "tokenlean.cli.proxy": "tokenlean.cli._proxy",
    "tokenlean.cli.replay": "tokenlean.cli._replay",
    "tokenlean.cli.shorten": "tokenlean.cli._shorten",
    "tokenlean.cli.wrap": "tokenlean.cli._wrap",
    "tokenlean.context_editor.cache": "tokenlean.context_editor._cache",
    "tokenlean.context_editor.clearing": "tokenlean.context_editor._clearing",
    "tokenlean.context_editor.config": "tokenlean.context_editor._config",
    "tokenlean.context_editor.ledger": "tokenlean.context_editor._ledger",
    "tokenlean.context_editor.plan": "tokenlean.context_editor._plan",
    "tokenlean.langchain.adapter": "tokenlean.langchain._adapter",
    "tokenlean.langchain.helpers": "tokenlean.langchain._helpers",
    "tokenlean.loop_guard.canonical": "tokenlean.loop_guard._canonical",
    "tokenlean.loop_guard.detect": "tokenlean.loop_guard._detect",
    "tokenlean.loop_guard.signals": "tokenlean.loop_guard._signals",
    "tokenlean.loop_guard.steps": "tokenlean.loop_guard._steps",
    "tokenlean.proxy.app": "tokenlean.proxy._app",
    "tokenlean.proxy.conversations": "tokenlean.testing.bodies",
    "tokenlean.proxy.rewrite": "tokenlean.proxy._rewrite",
    "tokenlean.proxy.routing": "tokenlean.proxy._routing",
    "tokenlean.proxy.scan": "tokenlean.proxy._scan",
    "tokenlean.proxy.server": "tokenlean.proxy._server",
    "tokenlean.proxy.sessions": "tokenlean.proxy._sessions",
    "tokenlean.proxy.settings": "tokenlean.proxy._settings",
    "tokenlean.proxy.stats": "tokenlean.proxy._stats",
    "tokenlean.proxy.testing": "tokenlean.testing.upstream",
    "tokenlean.raw.anthropic": "tokenlean.raw._anthropic",
    "tokenlean.raw.build": "tokenlean.testing.bodies",
    "tokenlean.raw.history": "tokenlean.pipeline",
    "tokenlean.raw.memo": "tokenlean._checkpoints",
    "tokenlean.raw.openai_chat": "tokenlean.raw._openai_chat",
    "tokenlean.raw.openai_responses": "tokenlean.raw._openai_responses",
    "tokenlean.raw.originals": "tokenlean.store",
    "tokenlean.raw.replay": "tokenlean.replay._raw",
    "tokenlean.raw.sdk": "tokenlean.raw._sdk",
    "tokenlean.raw.view": "tokenlean.raw._view",
    "tokenlean.replay.bundled": "tokenlean.replay._bundled",
    "tokenlean.replay.engine": "tokenlean.replay._engine",
    "tokenlean.replay.formats": "tokenlean.replay._formats",
    "tokenlean.replay.metrics": "tokenlean.replay._metrics",
    "tokenlean.replay.raw": "tokenlean.replay._raw",
    "tokenlean.replay.refs": "tokenlean.replay._refs",
    "tokenlean.replay.report": "tokenlean.replay._report",
    "tokenlean.replay.runner": "tokenlean.replay._runner",
    "tokenlean.replay.strategies": "tokenlean.replay._strategies",
    "tokenlean.replay.timing": "tokenlean.replay._timing",
    "tokenlean.shorten.classify": "tokenlean.shorten._classify",
    "tokenlean.shorten.code": "tokenlean.shorten._code",
    "tokenlean.shorten.core": "tokenlean.shorten._core",
    "tokenlean.shorten.detect": "tokenlean.shorten._detect",
    "tokenlean.shorten.docs": "tokenlean.shorten._docs",
    "tokenlean.shorten.firstsight": "tokenlean.shorten._firstsight",
    "tokenlean.shorten.huge": "tokenlean.shorten._huge",
    "tokenlean.shorten.inputs": "tokenlean.shorten._inputs",
    "tokenlean.shorten.jsonc": "tokenlean.shorten._jsonc",
    "tokenlean.shorten.lines": "tokenlean.shorten._lines",
    "tokenlean.shorten.logs": "tokenlean.shorten._logs",
    "tokenlean.shorten.markers": "tokenlean.shorten._markers",
    "tokenlean.shorten.options": "tokenlean.shorten._options",
    "tokenlean.shorten.pages": "tokenlean.shorten._pages",
    "tokenlean.shorten.query": "tokenlean.shorten._query",
    "tokenlean.shorten.report": "tokenlean.shorten._report",
    "tokenlean.shorten.seen": "tokenlean.shorten._seen",
    "tokenlean.shorten.similar": "tokenlean.shorten._similar",
    "tokenlean.shorten.text": "tokenlean.shorten._text",
    "tokenlean.shorten.wrapped": "tokenlean.shorten._wrapped",
    "tokenlean.token_saving.anthropic_classifier": "tokenlean.token_saving._anthropic_classifier",
    "tokenlean.token_saving.early_exit": "tokenlean.token_saving._early_exit",
    "tokenlean.token_saving.head_tail": "tokenlean.token_saving._head_tail",
    "tokenlean.token_saving.plan": "tokenlean.token_saving._plan",
    "tokenlean.token_saving.policy": "tokenlean.token_saving._policy",
    "tokenlean.token_saving.stats": "tokenlean.token_saving._stats",
    "tokenlean.token_saving.words": "tokenlean.token_saving._words",
}


class _Forward(types.ModuleType):
    """A stand-in for an old path: every attribute is read from the module that replaced it."""

    def __init__(self, name: str, target: types.ModuleType) -> None:
        super().__init__(name, f"moved to {target.__name__}")
        self._target = target

    def __getattr__(self, attribute: str) -> object:
        return getattr(self._target, attribute)

    def __dir__(self) -> list[str]:
        return dir(self._target)


class _Loader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        warnings.warn(
            f"{spec.name} has moved to {self.new}; import from the package it is in",
            DeprecationWarning,
            stacklevel=2,
        )
        return _Forward(spec.name, importlib.import_module(self.new))

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        return None if new is None else importlib.util.spec_from_loader(fullname, _Loader(new))


def install() -> None:
    """Put the finder at the end of ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_Finder())
